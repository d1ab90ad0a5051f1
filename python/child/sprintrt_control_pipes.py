"""The pipes of sprintrt_control (docs/protocol.md sections 2 and 3): requests read
with a restricted unpickler, replies written as conservative pickles, length
prefixed or raw; and the small helpers the control's modules share. Python 3
and NumPy only, as sprintrt_control."""

from __future__ import annotations

import codecs
import importlib
import io
import os
import pickle
import struct
import sys
from typing import Any, BinaryIO

import numpy

#: The global that the arrays of our replies are built with; both RETURNN's and
#: sprintrt's parents read it.
ARRAY_GLOBAL = ("returnn.util.task_system", "make_numpy_ndarray_fromstring")
#: The largest request a length prefix may announce: the int32 limit.
MAX_MESSAGE_SIZE = 2**31 - 1
_ARRAY_MODULES = ("returnn.util.task_system", "TaskSystem")
_ARRAY_DTYPES = ("float32", "float64", "int32", "uint32", "int64", "uint8")


class ProtocolError(Exception):
    """The pipes do not carry the protocol any more (closed, broken, or bytes
    that are no request): the child cannot go on."""


def _describe(exc):
    """An exception as the text of an exception reply."""
    text = exc.args[0] if len(exc.args) == 1 and isinstance(exc.args[0], str) else str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _say(message):
    """One line on stderr, which the parent keeps and quotes in its errors."""
    sys.stderr.write(f"sprintrt_control[pid {os.getpid()}]: {message}\n")
    sys.stderr.flush()


def _text(value):
    """A segment name or orthography as str: RASR gives bytes in places."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8")
    return value


def _shape_text(value):
    """An array as "dtype [shape]" for messages, anything else by its type."""
    if isinstance(value, numpy.ndarray):
        return f"{value.dtype} {list(value.shape)}"
    return type(value).__name__


# -- pickles ---------------------------------------------------------------------


def make_numpy_ndarray_fromstring(data: bytes, dtype: str,
                                  shape: tuple[int, ...]) -> numpy.ndarray:
    """The array a request's ``make_numpy_ndarray_fromstring`` global builds: C
    order, little-endian."""
    if dtype not in _ARRAY_DTYPES:
        raise pickle.UnpicklingError(f"array dtype {dtype!r} is not one of "
                                     f"{', '.join(_ARRAY_DTYPES)}")
    wire = numpy.dtype(dtype).newbyteorder("<")
    array = numpy.frombuffer(bytes(data), dtype=wire).astype(numpy.dtype(dtype), copy=False)
    return array.reshape(tuple(int(n) for n in shape))


def _numpy_scalar_constructor():
    for module in ("numpy._core.multiarray", "numpy.core.multiarray"):
        try:
            return importlib.import_module(module).scalar
        except (ImportError, AttributeError):
            continue
    raise ImportError("numpy has no multiarray.scalar")


class _RequestUnpickler(pickle.Unpickler):
    """Python's unpickler with the globals of docs/protocol.md section 3 only: a
    request can build values, never call anything else."""

    def find_class(self, module: str, name: str) -> Any:
        if name == "make_numpy_ndarray_fromstring" and module in _ARRAY_MODULES:
            return make_numpy_ndarray_fromstring
        if name == "scalar" and module in ("numpy.core.multiarray", "numpy._core.multiarray"):
            return _numpy_scalar_constructor()
        if (module, name) == ("numpy", "dtype"):
            return numpy.dtype
        if (module, name) == ("_codecs", "encode"):
            return codecs.encode
        raise pickle.UnpicklingError(f"global '{module}.{name}' is not allowed in a request")


def _encode(value, out):
    """Appends the pickle opcodes of `value` (str, bytes, bool, int, float, None,
    tuple or numpy array) to `out`, in the conservative form of docs/protocol.md
    section 3 that every Python 3 and sprintrt's parent read."""
    if value is None:
        out += b"N"
    elif isinstance(value, bool):
        out += b"\x88" if value else b"\x89"
    elif isinstance(value, (int, numpy.integer)):
        value = int(value)
        if -(2**31) <= value < 2**31:
            out += b"J" + struct.pack("<i", value)
        else:
            raw = value.to_bytes((value.bit_length() + 8) // 8, "little", signed=True)
            out += b"\x8a" + bytes([len(raw)]) + raw
    elif isinstance(value, (float, numpy.floating)):
        out += b"G" + struct.pack(">d", float(value))
    elif isinstance(value, str):
        raw = value.encode("utf-8", "surrogatepass")
        out += b"X" + struct.pack("<I", len(raw)) + raw
    elif isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        out += b"B" + struct.pack("<I", len(raw)) + raw
    elif isinstance(value, tuple):
        out += b"("
        for item in value:
            _encode(item, out)
        out += b"t"
    elif isinstance(value, numpy.ndarray):
        little = value.astype(value.dtype.newbyteorder("<"), order="C", copy=False)
        module, name = ARRAY_GLOBAL
        out += b"c" + f"{module}\n{name}\n".encode("ascii")
        _encode((numpy.ascontiguousarray(little).tobytes(),
                value.dtype.name, tuple(value.shape)), out)
        out += b"R"
    else:
        raise TypeError(f"cannot send a {type(value).__name__} to the parent")


def encode_message(value: Any) -> bytes:
    """One message as a pickle (protocol 3) of `value`."""
    out = bytearray(b"\x80\x03")
    _encode(value, out)
    out += b"."
    return bytes(out)


# -- pipes -----------------------------------------------------------------------


class Pipes:
    """The two pipes to the parent: requests come on ``p2c_fd``, replies go on
    ``c2p_fd``, each one pickle, with a little-endian int32 length in front
    (``framing`` ``length_prefixed``) or back to back (``raw``)."""

    def __init__(self, p2c_fd: int, c2p_fd: int, framing: str = "length_prefixed") -> None:
        if framing not in ("length_prefixed", "raw"):
            raise ValueError(
                f"pymod config framing must be length_prefixed or raw, got {framing!r}")
        self.p2c_fd: int | None = p2c_fd
        self.c2p_fd: int | None = c2p_fd
        self.framing = framing
        self.requests = 0
        self._raw_reader: BinaryIO | None = None
        if framing == "raw":
            self._raw_reader = os.fdopen(os.dup(p2c_fd), "rb")

    def _read_exactly(self, fd: int, count: int, what: str) -> bytearray:
        """``count`` bytes of ``what`` from the request pipe ``fd``."""
        buffer = bytearray(count)
        view = memoryview(buffer)
        got = 0
        while got < count:
            try:
                n = os.readv(fd, [view[got:]])
            except OSError as exc:
                raise ProtocolError(f"reading {what} from the request pipe (fd {fd}): "
                                    f"{exc.strerror}") from exc
            if n == 0:
                if got == 0 and what == "a length prefix":
                    raise ProtocolError("the parent closed the request pipe without sending exit")
                raise ProtocolError(f"the parent closed the request pipe in the middle of {what} "
                                    f"({got} of {count} bytes received)")
            got += n
        return buffer

    def read(self) -> Any:
        """The next request, decoded; a ProtocolError when there is none."""
        self.requests += 1
        number = self.requests
        if self.framing == "raw":
            if self._raw_reader is None:
                raise ProtocolError(f"the request pipe is closed (request {number})")
            try:
                return _RequestUnpickler(self._raw_reader).load()
            except EOFError as exc:
                raise ProtocolError(
                    f"the parent closed the request pipe (request {number})") from exc
            except Exception as exc:
                raise ProtocolError(f"request {number} is not a valid pickle: "
                                    f"{_describe(exc)}") from exc
        fd = self.p2c_fd
        if fd is None:
            raise ProtocolError(f"the request pipe is closed (request {number})")
        prefix = self._read_exactly(fd, 4, "a length prefix")
        if number == 1 and prefix[0] == 0x80 and 2 <= prefix[1] <= 5:
            raise ProtocolError("the first request starts with a pickle, not a length prefix: the "
                                "parent writes raw pickles (add framing:raw to the pymod config, "
                                "sprintControlConfig {\"framing\": \"raw\"})")
        (size,) = struct.unpack("<i", bytes(prefix))
        if size <= 0 or size > MAX_MESSAGE_SIZE:
            raise ProtocolError(f"request {number} has length prefix {size}: no message is that "
                                "long")
        data = self._read_exactly(fd, size, f"request {number} ({size} bytes)")
        try:
            return _RequestUnpickler(io.BytesIO(data)).load()
        except Exception as exc:
            raise ProtocolError(f"request {number} is not a valid pickle: "
                                f"{_describe(exc)}") from exc

    def write(self, value: Any) -> None:
        """Sends one reply."""
        data = encode_message(value)
        if self.framing == "length_prefixed":
            data = struct.pack("<i", len(data)) + data
        if self.c2p_fd is None:
            raise ProtocolError("the reply pipe is closed")
        view = memoryview(data)
        while view:
            try:
                n = os.write(self.c2p_fd, view)
            except BrokenPipeError as exc:
                raise ProtocolError(f"the parent closed the reply pipe (fd {self.c2p_fd})") from exc
            except OSError as exc:
                raise ProtocolError(f"writing a reply to fd {self.c2p_fd}: {exc.strerror}") from exc
            view = view[n:]

    def close(self) -> None:
        """Closes both pipes (once)."""
        if self._raw_reader is not None:
            self._raw_reader.close()
            self._raw_reader = None
        for fd in (self.p2c_fd, self.c2p_fd):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.p2c_fd = self.c2p_fd = None
