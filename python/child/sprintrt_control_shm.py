"""The child's side of sprintrt's shared region (docs/protocol.md section 7):
the parent offers a sealed memory file as ``sprintrtSharedMemoryFd:N`` in the
pymod config; a loss request may then carry, instead of its posteriors,

    ("sprintrt_shm", offset, "float32", (T, D))

and its reply carries the same reference after the error signal was written
over the posteriors. Python 3 and NumPy only, as sprintrt_control."""

from __future__ import annotations

import fcntl
import mmap
import os
from typing import Any

import numpy

#: The pymod config key of the offer, the tag of a reference and what the
#: ``init`` reply says to accept the region.
CONFIG_KEY = "sprintrtSharedMemoryFd"
TAG = "sprintrt_shm"

# fcntl has them since Python 3.8 on Linux; the values are the kernel's.
_F_GET_SEALS = getattr(fcntl, "F_GET_SEALS", 1034)
_F_SEAL_SHRINK = getattr(fcntl, "F_SEAL_SHRINK", 0x0002)
_MADV_POPULATE_WRITE = 23


def is_reference(value: Any) -> bool:
    """Whether a request's posteriors are a reference into the region."""
    return isinstance(value, tuple) and len(value) > 0 and value[0] == TAG


class SharedRegion:
    """The region the parent passed as descriptor ``fd``, mapped read-write.
    The parent grows it; a reference beyond the mapping maps it again."""

    def __init__(self, fd: int) -> None:
        seals = fcntl.fcntl(fd, _F_GET_SEALS)  # OSError: no memory file
        if not seals & _F_SEAL_SHRINK:
            raise ValueError(f"descriptor {fd} may shrink (not sealed with F_SEAL_SHRINK)")
        os.set_inheritable(fd, False)
        self.fd = fd
        self.size = 0
        self._map: mmap.mmap | None = None
        self._remap()

    def _remap(self) -> None:
        size = os.fstat(self.fd).st_size
        if size == self.size:
            return
        # The old mapping stays alive while views of it do.
        self._map = mmap.mmap(self.fd, size) if size else None
        self.size = size
        if self._map is not None and hasattr(self._map, "madvise"):
            try:
                self._map.madvise(_MADV_POPULATE_WRITE)
            except OSError:
                pass  # an older kernel: the pages fault in on first use

    def view(self, reference: Any, seg_len: int, what: str) -> numpy.ndarray:
        """The float32 [seg_len, D] array a reference names, checked: the form,
        the dtype, the shape, the alignment and that it lies inside the
        region. A ValueError names what is wrong."""
        if (not is_reference(reference) or len(reference) != 4
                or not isinstance(reference[1], int) or isinstance(reference[1], bool)
                or not isinstance(reference[3], tuple) or len(reference[3]) != 2
                or not all(isinstance(n, int) and not isinstance(n, bool) and n > 0
                           for n in reference[3])):
            raise ValueError(f"{what}: a shared-memory reference must be ('{TAG}', offset, "
                             f"'float32', (rows, cols)), got {reference!r}")
        _, offset, dtype, (rows, cols) = reference
        if dtype != "float32":
            raise ValueError(f"{what}: the dtype must be 'float32', got {dtype!r}")
        if rows != seg_len:
            raise ValueError(f"{what}: the shape must be ({seg_len}, D), got {(rows, cols)}")
        nbytes = rows * cols * 4
        if offset < 0 or offset % 4:
            raise ValueError(f"{what}: offset {offset} is not a multiple of 4 bytes")
        if offset + nbytes > self.size:
            self._remap()
        if offset + nbytes > self.size or self._map is None:
            raise ValueError(f"{what}: {nbytes} bytes at offset {offset} lie outside the region "
                             f"of {self.size} bytes")
        array = numpy.frombuffer(self._map, dtype=numpy.float32, count=rows * cols, offset=offset)
        return array.reshape(rows, cols)


def reference_of(offset: int, array: numpy.ndarray) -> tuple[str, int, str, tuple[int, int]]:
    """The reference to a float32 [T, D] array at ``offset``."""
    return (TAG, int(offset), "float32", (int(array.shape[0]), int(array.shape[1])))
