"""``FsaBuilder``: batch FSAs for PyTorch training from a pool of Sprint
workers, cached per segment and prefetched in the background. Its contract
is in docs/python.md ("PyTorch: FsaBuilder"). The module imports without
PyTorch: only the batch layouts (``build_batch``,
``build_batch_by_orthography``) need it."""

from __future__ import annotations

import collections
import numbers
import os
import threading
from collections.abc import MutableMapping, Sequence
from typing import Any, Callable, Union

import numpy

from ._arguments import _tag_list, _text, _text_list
from ._lru import ByteBoundedLru
from ._pool import SprintInstancePool, SprintOpts
from ._sprintrt import Error, canonical_options
from .fsa_exports import ExportResult, Fsa, FsaKey, _Export, _Failure, _InFlight, batch_error
from .fsa_layouts import WeightedFsa, WeightedFsaV2, _torch, join_fsas_v1, join_fsas_v2
from .sprint_opts import _check_sprint_opts, _copy_opts, _options_json

__all__ = ["DEFAULT_CACHE_BYTES", "ENTRY_OVERHEAD_BYTES", "FsaBuilder", "PREFETCHES_KEPT"]

#: The default bound of a builder's cache: 1 GiB. A CTC FSA of 60 labels
#: takes about 6 KB, a RASR HMM FSA of a 15 s segment some 100 KB, so this
#: holds a corpus of 10^4-10^5 segments (each DataLoader worker process has a
#: cache of its own).
DEFAULT_CACHE_BYTES = 1 << 30

#: What a cache entry counts beyond its arrays' bytes: its key and place in
#: the LRU order, its tuple, the two arrays' headers and owners (measured on
#: 64-bit CPython: about 270 + 72 + 2 * (112 + 48) bytes; a long segment
#: name adds its length, which is not counted). Fixed, so that the
#: accounting is exact.
ENTRY_OVERHEAD_BYTES = 640

#: How long a prefetched FSA that no build has taken yet is held (outside
#: the cache, so that no cache bound drops it before its build): until this
#: many later ``prefetch`` calls have not asked for it. The intended loop
#: takes each within one; a loop prefetching fewer than this many batches
#: ahead loses none, and what prefetches fetched for batches that are never
#: built (the last prefetch of a run, a skipped batch) is held no longer.
#: A failure of a prefetch is held the same way.
PREFETCHES_KEPT = 8

#: A batch in one of the builder's layouts.
BatchFsa = Union[WeightedFsa, WeightedFsaV2]

_LAYOUTS: dict[str, Callable[[Sequence[Fsa], float], Any]] = {"v1": join_fsas_v1,
                                                              "v2": join_fsas_v2}

# A cache key's source: what its text names.
_SEGMENT = "segment"
_ORTHOGRAPHY = "orthography"


def _entry_bytes(fsa: Fsa) -> int:
    """What the cache counts for one FSA: its edges' and weights' bytes plus
    ``ENTRY_OVERHEAD_BYTES``."""
    return fsa.edges.nbytes + fsa.weights.nbytes + ENTRY_OVERHEAD_BYTES


class _Held:
    """A background export's result, held for the build that takes it:
    ``prefetch`` is the number of the last prefetch that asked for it."""

    __slots__ = ("prefetch", "result")

    def __init__(self, prefetch: int, result: ExportResult) -> None:
        self.prefetch = prefetch
        self.result = result


class FsaBuilder:
    """Batch FSAs in i6_models' layouts (``sprintrt.torch.WeightedFsa``, or
    ``WeightedFsaV2`` with ``layout="v2"``) from a pool of Sprint workers,
    cached per segment and prefetched in the background: a drop-in for
    i6_models' ``RasrFsaBuilder``/``RasrFsaBuilderV2`` (and
    ``RasrFsaBuilderByOrthography`` through the ``*_by_orthography``
    methods). The pool: exactly one of ``sprint_opts`` (as
    ``SprintInstancePool`` takes them; ``in_process=True`` for in-process
    simulated workers) and ``pool`` (an existing ``SprintInstancePool``).
    ``tdp_scale`` multiplies the weights as i6_models does; ``cache_bytes``
    bounds the cache (0 caches nothing). Thread-safe and picklable.

    The contract in full (the pool's kinds, the cache and its key, the
    prefetch loop and how long prefetched results are held, failures and
    interruptions, pickling and forks, the counters of ``stats()``):
    docs/python.md, "PyTorch: FsaBuilder".
    """

    in_process: bool
    tdp_scale: float
    layout: str
    cache_bytes: int
    _pool: SprintInstancePool | None

    def __init__(self, sprint_opts: SprintOpts | None = None, *,
                 pool: SprintInstancePool | None = None, in_process: bool = False,
                 tdp_scale: float = 1.0, layout: str = "v1",
                 cache_bytes: int = DEFAULT_CACHE_BYTES) -> None:
        if (sprint_opts is None) == (pool is None):
            raise ValueError("FsaBuilder needs either sprint_opts or pool (exactly one of them)")
        if not isinstance(in_process, bool):
            raise TypeError(f"in_process must be a bool, got {type(in_process).__name__}")
        if pool is not None:
            if not isinstance(pool, SprintInstancePool):
                raise TypeError(f"pool must be a sprintrt.SprintInstancePool, got "
                                f"{type(pool).__name__}")
            if in_process:
                raise ValueError("in_process is for a builder from sprint_opts; a pool's workers "
                                 "are what they are (pool.in_process)")
            sprint_opts = pool.sprint_opts
            in_process = pool.in_process
        else:
            _check_sprint_opts(sprint_opts)
        if isinstance(tdp_scale, bool) or not isinstance(tdp_scale, numbers.Real):
            raise TypeError(f"tdp_scale must be a number, got {type(tdp_scale).__name__}")
        if layout not in _LAYOUTS:
            raise ValueError(f"layout must be 'v1' or 'v2', got {layout!r}")
        if isinstance(cache_bytes, bool) or not isinstance(cache_bytes, numbers.Integral):
            raise TypeError(f"cache_bytes must be an int, got {type(cache_bytes).__name__}")
        if cache_bytes < 0:
            raise ValueError(f"cache_bytes must not be negative, got {int(cache_bytes)}")
        assert sprint_opts is not None
        self._sprint_opts: SprintOpts = _copy_opts(sprint_opts)
        self.in_process = in_process
        self.tdp_scale = float(tdp_scale)
        self.layout = layout
        self.cache_bytes = int(cache_bytes)
        self._start_afresh()
        self._pool = pool

    # --- pickling and forks ----------------------------------------------------

    def __getstate__(self) -> dict[str, Any]:
        return {"sprint_opts": self._sprint_opts, "in_process": self.in_process,
                "tdp_scale": self.tdp_scale, "layout": self.layout,
                "cache_bytes": self.cache_bytes}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._sprint_opts = _copy_opts(state["sprint_opts"])
        self.in_process = state["in_process"]
        self.tdp_scale = state["tdp_scale"]
        self.layout = state["layout"]
        self.cache_bytes = state["cache_bytes"]
        self._start_afresh()

    def _start_afresh(self) -> None:
        """A builder with an empty cache and counters, and no pool yet."""
        self._cache: ByteBoundedLru[FsaKey, Fsa] = ByteBoundedLru(_entry_bytes)
        # A background export's result, until a build takes it or
        # PREFETCHES_KEPT later prefetches did not ask for it.
        self._ready: dict[FsaKey, _Held] = {}
        self._prefetches = 0  # prefetch calls so far
        self._counts = dict.fromkeys(("hits", "misses", "taken", "waits", "prefetched", "exports",
                                      "failures", "cancelled", "evictions", "dropped"), 0)
        self._options_key: str | None = None
        self._forget_process()

    def _forget_process(self) -> None:
        """Drops what belongs to the process, not to the builder: the pool,
        the lock, the background thread and the exports under way (after a
        fork, none of them work in the child; the lock may even be held)."""
        self._pid = os.getpid()
        self._pool = None
        self._lock = threading.Lock()
        self._in_flight = _InFlight()
        self._thread: threading.Thread | None = None

    def _check_process(self) -> None:
        """Starts afresh (keeping the cache) in a forked child."""
        if os.getpid() != self._pid:
            self._forget_process()

    # --- the public calls --------------------------------------------------------

    @property
    def pool(self) -> SprintInstancePool:
        """The ``SprintInstancePool`` the builder exports through (made now if
        it was not yet: for a builder from ``sprint_opts``, after unpickling or
        in a forked child)."""
        self._check_process()
        pool = self._pool
        if pool is None:
            # Equal options share one pool per process; a race makes it once.
            pool = SprintInstancePool.get_global_instance(self._sprint_opts,
                                                          in_process=self.in_process)
            self._pool = pool
        return pool

    @property
    def sprint_opts(self) -> SprintOpts:
        """The pool's options (a copy)."""
        return _copy_opts(self._sprint_opts)

    def build_batch(self, tags: Any) -> BatchFsa:
        """The FSAs of the segments ``tags`` (str or bytes names, or an array
        of them, as ``SprintInstancePool`` takes tags) joined into the
        builder's layout, weights times ``tdp_scale``. Needs PyTorch (the
        layouts are tensors; ImportError without it)."""
        return self._build(self._keys(_SEGMENT, _tag_list(tags)))

    def build_batch_by_orthography(self, orthographies: Any) -> BatchFsa:
        """The FSAs of ``orthographies`` (str each; for sprint-sim, a label
        sequence as in its corpus file) joined into the builder's layout."""
        return self._build(self._keys(_ORTHOGRAPHY, _text_list(orthographies, "orthographies")))

    def build_single(self, tag: str | bytes) -> tuple[int, int, numpy.ndarray, numpy.ndarray]:
        """One segment's FSA as librasr's tuple (num_states, num_edges, edges
        uint32 [3*E]: all from-states, all to-states, all emissions, weights
        float32 [E]), scaled as i6_models' builder of the layout returns it:
        in the V1 layout unscaled (``RasrFsaBuilder.build_single`` returns
        the raw FSA, its ``build_batched_fsa`` scales the joined batch), in
        V2 times ``tdp_scale`` (``RasrFsaBuilderV2``, whose join does not
        scale). Either way ``build_batch`` is what i6_models' builder makes
        of these. The arrays are the caller's."""
        return self._single(_SEGMENT, _text(tag, "tag"))

    def build_by_orthography(
            self, orthography: str | bytes) -> tuple[int, int, numpy.ndarray, numpy.ndarray]:
        """The FSA of ``orthography``, scaled as ``build_single``'s: in V2
        times ``tdp_scale``, as ``RasrFsaBuilderByOrthography`` (a V2
        builder) returns it; in V1 unscaled (i6_models has no V1 builder by
        orthography: this keeps ``RasrFsaBuilder``'s convention, so that
        ``build_batch_by_orthography`` is the V1 join of these, scaled)."""
        return self._single(_ORTHOGRAPHY, _text(orthography, "orthography"))

    def prefetch(self, tags: Any, *, by_orthography: bool = False) -> None:
        """Starts exporting the FSAs of ``tags`` (orthographies if
        ``by_orthography``) that are neither cached, held from an earlier
        prefetch, nor under way, on a background thread, and returns at
        once. The results are held for the build that takes them (see
        ``PREFETCHES_KEPT``); its errors are raised by the ``build_batch``
        that needs the segment."""
        if by_orthography:
            keys = self._keys(_ORTHOGRAPHY, _text_list(tags, "tags"))
        else:
            keys = self._keys(_SEGMENT, _tag_list(tags))
        self._check_process()
        with self._lock:
            self._prefetches += 1
            queued: dict[FsaKey, _Export] = {}
            self._look_up(keys, True, collections.Counter(), queued)
            self._drop_stale()  # after the lookup, which keeps what this one asks for
            if not queued:
                return
            self._counts["prefetched"] += len(queued)
            self._in_flight.enqueue(queued)
            if self._thread is None:
                thread = threading.Thread(target=self._serve_queue, name="sprintrt-fsa-prefetch",
                                          daemon=True)
                thread.start()  # if it cannot start, the builds export what it queued
                self._thread = thread

    def stats(self) -> dict[str, int]:
        """The cache's counters and size now (a dict; docs/python.md says
        what each counts)."""
        self._check_process()
        with self._lock:
            result = dict(self._counts)
            result.update(bytes=self._cache.bytes, entries=len(self._cache),
                          cache_bytes=self.cache_bytes, held=len(self._ready),
                          in_flight=len(self._in_flight))
        return result

    # --- lookups and exports -------------------------------------------------------

    def _keys(self, source: str, texts: list[str]) -> list[FsaKey]:
        """The cache keys of ``texts`` of ``source``; a ValueError for none."""
        if not texts:
            raise ValueError(f"a batch needs at least one {source}, got none")
        if self._options_key is None:
            self._options_key = canonical_options(_options_json(self._sprint_opts))
        return [FsaKey(self._options_key, source, text) for text in texts]

    def _look_up(self, keys: Sequence[FsaKey], prefetch: bool, counts: MutableMapping[str, int],
                 exports: dict[FsaKey, _Export]
                 ) -> tuple[dict[FsaKey, ExportResult], dict[FsaKey, _Export]]:
        """With the lock held: sorts the distinct keys of ``keys``, counting
        the lookups in ``counts``, and returns (found: key -> a cached FSA,
        or a prefetch's held result (FSA or ``_Failure``), which a build now
        takes; waited: key -> ``_Export`` under way elsewhere). It puts the
        keys this caller exports into ``exports`` (key -> ``_Export``),
        registered in flight as it goes (so that whatever interrupts the
        caller, it can end them): started for a build, queued for a
        ``prefetch``. A prefetch takes nothing: what is held or exported in
        the background is marked as asked for by it."""
        found: dict[FsaKey, ExportResult] = {}
        waited: dict[FsaKey, _Export] = {}
        seen = set()
        for key in keys:
            if key in seen:
                counts["hits"] += 1  # served by this call's first lookup of it
                continue
            seen.add(key)
            fsa = self._cache.get(key)
            if fsa is not None:
                counts["hits"] += 1
                found[key] = fsa
                continue
            counts["misses"] += 1
            held = self._ready.get(key)
            if held is not None:
                if not prefetch:
                    counts["taken"] += 1
                    found[key] = held.result
                    self._take(key, held.result)
                    continue
                if not isinstance(held.result, _Failure):
                    held.prefetch = self._prefetches
                    continue
                del self._ready[key]  # a failure: this prefetch exports it again
            export = self._in_flight.get(key)
            if export is None:
                exports[key] = self._in_flight.register(
                    key, self._prefetches if prefetch else None)
                continue
            counts["waits"] += 1
            if prefetch:
                if export.prefetch is not None:
                    export.prefetch = self._prefetches
            elif export.started:
                waited[key] = export
            else:
                # Queued, not yet under way: this call exports it itself, so
                # that it waits for nothing queued before it.
                export.started = True
                exports[key] = export
        return found, waited

    def _take(self, key: FsaKey, result: ExportResult) -> None:
        """With the lock held: ``result``, of a finished export of ``key``,
        is a build's: no longer held for another, cached if an FSA."""
        held = self._ready.get(key)
        if held is not None and held.result is result:
            del self._ready[key]
        if not isinstance(result, _Failure):
            self._store(key, result)

    def _drop_stale(self) -> None:
        """With the lock held: drops the held results that the last
        ``PREFETCHES_KEPT`` prefetches did not ask for."""
        stale = [key for key, held in self._ready.items()
                 if self._prefetches - held.prefetch >= PREFETCHES_KEPT]
        for key in stale:
            del self._ready[key]
        self._counts["dropped"] += len(stale)

    def _export(self, exports: dict[FsaKey, _Export],
                background: bool = False) -> dict[FsaKey, ExportResult]:
        """Exports the keys of ``exports`` (key -> its ``_Export``, registered
        in flight and started by this caller; of one source) in one pool call
        and ends their exports: an FSA of a build's is cached, a background
        result held (``_end_export``). Returns key -> FSA or ``_Failure``.
        Whatever ends it early (the call fails: shut down, interrupted; an
        exception while the results are taken), every export not ended yet
        ends with that failure, which is raised (in the background:
        swallowed, the failure is the segments')."""
        keys = list(exports)
        results: dict[FsaKey, ExportResult] = {}
        failure = _Failure("invalid_message", "the pool's reply held no FSA for it")
        try:
            with self._lock:
                self._counts["exports"] += len(keys)
            items = self.pool.export_fsas([key.text for key in keys],
                                          keys[0].source == _ORTHOGRAPHY)
            self._end_exports(keys, items, exports, results, background)
        except BaseException as e:
            failure = _Failure.of_exception(e)
            # Interrupted (Ctrl-C): the FSAs that arrived before are kept.
            arrived = getattr(e, "exported_fsas", None)
            if isinstance(arrived, list) and len(arrived) == len(keys):
                self._end_exports(keys, arrived, exports, results, background, failure)
            if not background:
                raise
        finally:
            self._end_unfinished(exports, failure, background)
        return results

    def _end_exports(self, keys: list[FsaKey], items: list[Any],
                     exports: dict[FsaKey, _Export], results: dict[FsaKey, ExportResult],
                     background: bool, interruption: _Failure | None = None) -> None:
        """Ends the exports of ``keys`` with the pool's ``items`` (one each:
        librasr's numbers or a ``sprintrt.Error``), into ``results``. After
        an ``interruption`` (a ``_Failure``), an item the stop cancelled ends
        with that instead: it says nothing about its segment."""
        with self._lock:
            for key, item in zip(keys, items):
                result: ExportResult
                if isinstance(item, Error):
                    cancelled = getattr(item, "code", "") == "cancelled"
                    if interruption is not None and cancelled:
                        result = interruption
                    else:
                        result = _Failure.of_exception(item)
                else:
                    num_states, edges, weights = item
                    result = Fsa(num_states, len(weights), edges, weights)
                results[key] = result
                self._end_export(key, exports[key], result, background)

    def _end_unfinished(self, exports: dict[FsaKey, _Export], failure: _Failure,
                        background: bool) -> None:
        """Ends each export of ``exports`` (key -> ``_Export``) that has not
        ended with ``failure``."""
        with self._lock:
            for key, export in exports.items():
                if not export.done.is_set():
                    self._end_export(key, export, failure, background)

    def _end_export(self, key: FsaKey, export: _Export, result: ExportResult,
                    background: bool) -> None:
        """With the lock held: ends ``export`` of ``key`` with ``result`` (an
        FSA or a ``_Failure``) and wakes its waiters. A build's FSA is
        cached; a background result is held for the build that takes it,
        unless it was interrupted (it says nothing about the segment) or
        ``PREFETCHES_KEPT`` prefetches have passed since one asked for it."""
        if isinstance(result, _Failure):
            self._counts["cancelled" if result.interrupted else "failures"] += 1
        elif not background:
            self._store(key, result)
        if background and not (isinstance(result, _Failure) and result.interrupted):
            assert export.prefetch is not None  # a background export is a prefetch's
            if self._prefetches - export.prefetch < PREFETCHES_KEPT:
                self._ready[key] = _Held(export.prefetch, result)
            else:
                self._counts["dropped"] += 1
        self._in_flight.end(key, export, result)

    def _store(self, key: FsaKey, fsa: Fsa) -> None:
        """With the lock held: caches ``fsa`` (see ``ByteBoundedLru.store``;
        one bigger than ``cache_bytes`` is not cached)."""
        self._counts["evictions"] += self._cache.store(key, fsa, self.cache_bytes)

    def _serve_queue(self) -> None:
        """The background thread: exports the queued keys that nobody took
        over meanwhile, until the queue is empty. If anything ends it early,
        the keys it took end as interrupted and a later prefetch starts a new
        thread (what is still queued, it serves; a build does it itself)."""
        taken: dict[FsaKey, _Export] = {}
        try:
            while True:
                with self._lock:
                    taken = {}
                    queued = self._in_flight.take_queued()
                    if queued is None:
                        self._thread = None
                        return
                    taken = queued
                for source in (_SEGMENT, _ORTHOGRAPHY):
                    part = {key: export for key, export in taken.items() if key.source == source}
                    if part:
                        self._export(part, background=True)
        finally:
            self._end_unfinished(taken, _Failure(
                "cancelled", "the prefetch thread ended before exporting it", interrupted=True),
                background=True)
            with self._lock:
                if self._thread is threading.current_thread():
                    self._thread = None

    def _fsas(self, keys: list[FsaKey]) -> dict[FsaKey, Fsa]:
        """key -> FSA for every key of ``keys``: from the cache, a prefetch's
        held result, this call's export, or exports under way; raises
        ``sprintrt.Error`` naming each one that failed. A key whose export
        under way was interrupted is looked up again (and exported by this
        call, unless another did it meanwhile); those lookups are not
        counted again."""
        self._check_process()
        results: dict[FsaKey, ExportResult] = {}
        todo: list[FsaKey] = keys
        counts: MutableMapping[str, int] = self._counts
        while todo:
            exports: dict[FsaKey, _Export] = {}
            try:
                with self._lock:
                    found, waited = self._look_up(todo, False, counts, exports)
                results.update(found)
                if exports:
                    results.update(self._export(exports))
            finally:
                if exports:  # an exception before the export began ends them
                    self._end_unfinished(exports, _Failure(
                        "cancelled", "the build was interrupted before exporting it",
                        interrupted=True), background=False)
            todo, counts = [], collections.Counter()
            for key, export in waited.items():
                export.done.wait()
                result = export.result
                assert result is not None  # set before done
                if isinstance(result, _Failure) and result.interrupted:
                    todo.append(key)
                    continue
                with self._lock:
                    self._take(key, result)
                results[key] = result
        error = batch_error(keys, results)
        if error is not None:
            raise error
        return {key: result for key, result in results.items() if isinstance(result, Fsa)}

    def _build(self, keys: list[FsaKey]) -> BatchFsa:
        """The FSAs of ``keys`` joined in the builder's layout, scaled."""
        _torch()  # the layouts' ImportError before any export, not after
        found = self._fsas(keys)
        return _LAYOUTS[self.layout]([found[key] for key in keys], self.tdp_scale)

    def _single(self, source: str,
                text: str) -> tuple[int, int, numpy.ndarray, numpy.ndarray]:
        """The FSA of ``text`` of ``source``, scaled as ``build_single`` says."""
        key, = self._keys(source, [text])
        num_states, num_edges, edges, weights = self._fsas([key])[key]
        if self.layout == "v2" and self.tdp_scale != 1.0:
            weights = weights * self.tdp_scale  # as i6_models' V2 builders scale each FSA
        else:
            weights = weights.copy()
        return num_states, num_edges, edges.copy(), weights
