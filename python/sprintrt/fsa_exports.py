"""The bookkeeping of ``FsaBuilder``'s exports: an FSA's key and librasr's
tuple, one export queued or under way, the registry that keeps one export
per key in flight, why one failed, and the error a batch with failed
segments raises."""

from __future__ import annotations

import collections
import threading
from collections.abc import Iterable, Sequence
from typing import NamedTuple, Union

import numpy

from ._sprintrt import Error


class FsaKey(NamedTuple):
    """What identifies an exported FSA: the pool's options (canonical JSON),
    the source (``"segment"`` or ``"orthography"``) and the text of that
    source."""

    options: str
    source: str
    text: str


class Fsa(NamedTuple):
    """One segment's FSA as librasr's tuple: edges uint32 [3*E] (all
    from-states, all to-states, all emissions), weights float32 [E]."""

    num_states: int
    num_edges: int
    edges: numpy.ndarray
    weights: numpy.ndarray


class _Export:
    """One FSA export, queued or under way (``started``): whoever needs it
    waits on ``done``; then ``result`` is the ``Fsa`` or a ``_Failure``.
    ``prefetch`` is the number of the last prefetch that asked for it (None
    if a build registered it)."""

    __slots__ = ("started", "done", "result", "prefetch")

    def __init__(self) -> None:
        self.started = False
        self.done = threading.Event()
        self.result: Fsa | _Failure | None = None
        self.prefetch: int | None = None


class _Failure:
    """Why an export failed: ``sprintrt.Error``'s code and message.
    ``interrupted``: it says nothing about the segment; the exporting
    thread was interrupted (a Ctrl-C, a MemoryError) before the result."""

    __slots__ = ("code", "message", "interrupted")

    def __init__(self, code: str, message: str, interrupted: bool = False) -> None:
        self.code = code
        self.message = message
        self.interrupted = interrupted

    @classmethod
    def of_exception(cls, e: BaseException) -> _Failure:
        """The failure ``e`` (a ``sprintrt.Error`` item or a raised exception)
        says."""
        if isinstance(e, Error):
            return cls(getattr(e, "code", "unknown_error"), str(e))
        return cls("cancelled", f"the export was interrupted ({type(e).__name__}: {e})",
                   interrupted=True)


#: An export's outcome: the FSA, or why there is none.
ExportResult = Union[Fsa, _Failure]


class _InFlight:
    """The exports queued or under way, by key: at most one per key, so that
    each FSA is exported once however many builds and prefetches ask for it
    meanwhile; and the keys queued for the background thread, in the order
    the prefetches asked. Not locked: its owner calls it under its own lock."""

    __slots__ = ("_exports", "_queue")

    def __init__(self) -> None:
        self._exports: dict[FsaKey, _Export] = {}
        self._queue: collections.deque[list[FsaKey]] = collections.deque()

    def __len__(self) -> int:
        return len(self._exports)

    def get(self, key: FsaKey) -> _Export | None:
        """The export of ``key`` queued or under way, if any."""
        return self._exports.get(key)

    def register(self, key: FsaKey, prefetch: int | None) -> _Export:
        """A new export of ``key`` (none may be in flight): queued for the
        prefetch numbered ``prefetch``, or, if None, started by a build."""
        export = self._exports[key] = _Export()
        if prefetch is not None:
            export.prefetch = prefetch
        else:
            export.started = True
        return export

    def enqueue(self, keys: Iterable[FsaKey]) -> None:
        """Queues ``keys`` (registered for a prefetch) for the background."""
        self._queue.append(list(keys))

    def take_queued(self) -> dict[FsaKey, _Export] | None:
        """The exports of the next queued keys that nobody started meanwhile,
        now started by the caller; None once the queue is empty."""
        if not self._queue:
            return None
        taken = {}
        for key in self._queue.popleft():
            export = self._exports.get(key)
            if export is not None and not export.started:
                export.started = True
                taken[key] = export
        return taken

    def end(self, key: FsaKey, export: _Export, result: ExportResult) -> None:
        """Ends ``export`` of ``key`` with ``result`` and wakes its waiters."""
        if self._exports.get(key) is export:
            del self._exports[key]
        export.result = result
        export.done.set()


def _describe(key: FsaKey) -> str:
    """How messages name the FSA of ``key``: "segment 'x'" or "orthography 'x'"."""
    return f"{key.source} '{key.text}'"


def _named(key: FsaKey, message: str) -> str:
    """``message`` about the FSA of ``key``, prefixed with its name unless it
    names it already (the pool's errors about a reply do)."""
    name = _describe(key)
    return message if name in message else f"{name}: {message}"


def batch_error(keys: Sequence[FsaKey],
                results: dict[FsaKey, ExportResult]) -> Error | None:
    """The ``sprintrt.Error`` of a batch of ``keys`` whose ``results`` (key
    -> FSA or ``_Failure``) hold failures, naming each failed FSA and its
    cause, with the code of the first; None if none failed."""
    distinct = list(dict.fromkeys(keys))
    failed: dict[FsaKey, _Failure] = {}
    for key in distinct:
        result = results[key]
        if isinstance(result, _Failure):
            failed[key] = result
    if not failed:
        return None
    messages = "; ".join(_named(key, failure.message) for key, failure in failed.items())
    error = Error(f"{len(failed)} of the {len(distinct)} FSAs failed: {messages}")
    error.code = next(iter(failed.values())).code
    return error
