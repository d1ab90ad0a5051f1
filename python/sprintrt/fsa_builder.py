"""``FsaBuilder``: batch FSAs for PyTorch training from a pool of Sprint
workers, cached per segment and prefetched in the background. Its contract
is in docs/python.md ("PyTorch: FsaBuilder"). The module imports without
PyTorch: only the batch layouts (``build_batch``,
``build_batch_by_orthography``) need it."""

from __future__ import annotations

import collections
import numbers
import os
from collections.abc import MutableMapping, Sequence
from typing import Any, Callable, Union

import numpy

from ._arguments import _tag_list, _text, _text_list
from ._fsa_prefetch import ORTHOGRAPHY as _ORTHOGRAPHY
from ._fsa_prefetch import SEGMENT as _SEGMENT
from ._fsa_prefetch import Prefetcher
from ._fsa_store import ENTRY_OVERHEAD_BYTES, PREFETCHES_KEPT, BuildLookup, FsaStore
from ._pool import SprintInstancePool, SprintOpts
from ._sprint_opts import check_sprint_opts, copy_opts, to_options_json
from ._sprintrt import Error, canonical_options
from .fsa_exports import ExportResult, Fsa, FsaKey, _Export, _Failure, batch_error
from .fsa_layouts import WeightedFsa, WeightedFsaV2, _torch, join_fsas_v1, join_fsas_v2

__all__ = ["DEFAULT_CACHE_BYTES", "ENTRY_OVERHEAD_BYTES", "FsaBuilder", "PREFETCHES_KEPT"]

#: The default bound of a builder's cache: 1 GiB. A CTC FSA of 60 labels
#: takes about 6 KB, a RASR HMM FSA of a 15 s segment some 100 KB, so this
#: holds a corpus of 10^4-10^5 segments (each DataLoader worker process has a
#: cache of its own).
DEFAULT_CACHE_BYTES = 1 << 30

#: A batch in one of the builder's layouts.
BatchFsa = Union[WeightedFsa, WeightedFsaV2]

_LAYOUTS: dict[str, Callable[[Sequence[Fsa], float], Any]] = {"v1": join_fsas_v1,
                                                              "v2": join_fsas_v2}


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
            check_sprint_opts(sprint_opts)
        if isinstance(tdp_scale, bool) or not isinstance(tdp_scale, numbers.Real):
            raise TypeError(f"tdp_scale must be a number, got {type(tdp_scale).__name__}")
        if layout not in _LAYOUTS:
            raise ValueError(f"layout must be 'v1' or 'v2', got {layout!r}")
        if isinstance(cache_bytes, bool) or not isinstance(cache_bytes, numbers.Integral):
            raise TypeError(f"cache_bytes must be an int, got {type(cache_bytes).__name__}")
        if cache_bytes < 0:
            raise ValueError(f"cache_bytes must not be negative, got {int(cache_bytes)}")
        assert sprint_opts is not None
        self._sprint_opts: SprintOpts = copy_opts(sprint_opts)
        self.in_process = in_process
        self.tdp_scale = float(tdp_scale)
        self.layout = layout
        self._start_afresh(int(cache_bytes))
        self._pool = pool

    # --- pickling and forks ----------------------------------------------------

    def __getstate__(self) -> dict[str, Any]:
        return {"sprint_opts": self._sprint_opts, "in_process": self.in_process,
                "tdp_scale": self.tdp_scale, "layout": self.layout,
                "cache_bytes": self.cache_bytes}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._sprint_opts = copy_opts(state["sprint_opts"])
        self.in_process = state["in_process"]
        self.tdp_scale = state["tdp_scale"]
        self.layout = state["layout"]
        self._start_afresh(state["cache_bytes"])

    def _start_afresh(self, cache_bytes: int) -> None:
        """A builder with an empty cache of ``cache_bytes`` and counters, and
        no pool yet."""
        self._store = FsaStore(cache_bytes)
        self._options_key: str | None = None
        self._forget_process()

    def _forget_process(self) -> None:
        """Drops what belongs to the process, not to the builder: the pool,
        the store's lock and exports under way, and the background thread
        (after a fork, none of them work in the child; the lock may even be
        held)."""
        self._pid = os.getpid()
        self._pool = None
        self._store.forget_process()
        # Through `_export` as it is when the thread calls it.
        self._prefetcher = Prefetcher(self._store,
                                      lambda exports: self._export(exports, background=True))

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
        return copy_opts(self._sprint_opts)

    @property
    def cache_bytes(self) -> int:
        """The bound of the cache, in bytes (0 caches nothing); a new bound
        applies from the next FSA stored."""
        return self._store.cache_bytes

    @cache_bytes.setter
    def cache_bytes(self, value: int) -> None:
        self._store.cache_bytes = value

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
        store = self._store
        with store.lock:
            queued = store.look_up_for_prefetch(keys)
            if not queued:
                return
            store.in_flight.enqueue(queued)
            self._prefetcher.start()

    def stats(self) -> dict[str, int]:
        """The cache's counters and size now (a dict; docs/python.md says
        what each counts)."""
        self._check_process()
        with self._store.lock:
            return self._store.stats()

    # --- lookups and exports -------------------------------------------------------

    def _keys(self, source: str, texts: list[str]) -> list[FsaKey]:
        """The cache keys of ``texts`` of ``source``; a ValueError for none."""
        if not texts:
            raise ValueError(f"a batch needs at least one {source}, got none")
        if self._options_key is None:
            self._options_key = canonical_options(to_options_json(self._sprint_opts))
        return [FsaKey(self._options_key, source, text) for text in texts]

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
        store = self._store
        results: dict[FsaKey, ExportResult] = {}
        failure = _Failure("invalid_message", "the pool's reply held no FSA for it")
        try:
            with store.lock:
                store.counts["exports"] += len(keys)
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
            with store.lock:
                store.end_unfinished(exports, failure, background)
        return results

    def _end_exports(self, keys: list[FsaKey], items: list[Any],
                     exports: dict[FsaKey, _Export], results: dict[FsaKey, ExportResult],
                     background: bool, interruption: _Failure | None = None) -> None:
        """Ends the exports of ``keys`` with the pool's ``items`` (one each:
        librasr's numbers or a ``sprintrt.Error``), into ``results``. After
        an ``interruption`` (a ``_Failure``), an item the stop cancelled ends
        with that instead: it says nothing about its segment."""
        with self._store.lock:
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
                self._store.end_export(key, exports[key], result, background)

    def _fsas(self, keys: list[FsaKey]) -> dict[FsaKey, Fsa]:
        """key -> FSA for every key of ``keys``: from the cache, a prefetch's
        held result, this call's export, or exports under way; raises
        ``sprintrt.Error`` naming each one that failed. A key whose export
        under way was interrupted is looked up again (and exported by this
        call, unless another did it meanwhile); those lookups are not
        counted again."""
        self._check_process()
        store = self._store
        results: dict[FsaKey, ExportResult] = {}
        todo: list[FsaKey] = keys
        counts: MutableMapping[str, int] = store.counts
        while todo:
            lookup = BuildLookup()
            try:
                with store.lock:
                    store.look_up_for_build(todo, counts, lookup)
                results.update(lookup.found)
                if lookup.exports:
                    results.update(self._export(lookup.exports))
            finally:
                if lookup.exports:  # an exception before the export began ends them
                    with store.lock:
                        store.end_unfinished(lookup.exports, _Failure(
                            "cancelled", "the build was interrupted before exporting it",
                            interrupted=True), background=False)
            todo, counts = [], collections.Counter()
            for key, export in lookup.waited.items():
                export.done.wait()
                result = export.result
                assert result is not None  # set before done
                if isinstance(result, _Failure) and result.interrupted:
                    todo.append(key)
                    continue
                with store.lock:
                    store.take(key, result)
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
