"""``FsaBuilder``: batch FSAs for PyTorch training from a pool of Sprint
workers, cached per segment and prefetched in the background (see the class).
"""

import collections
import numbers
import os
import threading

from . import (Error, SprintInstancePool, _check_sprint_opts, _copy_opts, _options_json,
               _tag_list, _text, _text_list, canonical_options)
from .fsa_exports import _Export, _Failure, batch_error
from .fsa_layouts import join_fsas_v1, join_fsas_v2

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

_LAYOUTS = {"v1": join_fsas_v1, "v2": join_fsas_v2}

# A cache key's source: what its text names.
_SEGMENT = "segment"
_ORTHOGRAPHY = "orthography"


def _entry_bytes(fsa):
    """What the cache counts for one FSA: its edges' and weights' bytes plus
    ``ENTRY_OVERHEAD_BYTES``."""
    return fsa[2].nbytes + fsa[3].nbytes + ENTRY_OVERHEAD_BYTES


class FsaBuilder:
    """Batch FSAs in i6_models' layouts (``sprintrt.torch.WeightedFsa``, or
    ``WeightedFsaV2`` with ``layout="v2"``) from a pool of Sprint workers: a
    drop-in for i6_models' ``RasrFsaBuilder``/``RasrFsaBuilderV2`` (and
    ``RasrFsaBuilderByOrthography`` through the ``*_by_orthography`` methods).

    The pool is any of the three kinds: Sprint children started from
    ``sprint_opts`` (as ``SprintInstancePool`` takes them); with
    ``in_process=True``, in-process simulated workers computing what
    sprint-sim would with those options (no child processes; sprint-sim's
    fault injection parameters are refused); or remote pools (``sprintrt
    serve`` on other machines), named in the options' ``"remote"`` (with
    ``"numInstances": 0`` for no local children), whose FSAs are bit for bit
    the local ones. Or ``pool``: an existing ``SprintInstancePool`` of either
    kind (its options and kind are what a pickled builder keeps).
    ``tdp_scale`` multiplies the weights as i6_models does (see
    ``sprintrt.fsa_layouts``). ``cache_bytes`` bounds the cache
    (``DEFAULT_CACHE_BYTES``, 1 GiB; 0 caches nothing; an FSA bigger than
    it is not cached).

    The segments of a batch that are not cached are exported in one call to
    the pool, which hands each to the next idle worker (parallel over the
    workers, load-balanced), with the GIL released.

    The cache holds each exported FSA (unscaled) under (the pool's options in
    their canonical form, the source: segment name or orthography, the text),
    least recently used first out once its bytes (each entry's edges and
    weights plus ``ENTRY_OVERHEAD_BYTES``) exceed ``cache_bytes``. The TDP
    scale is applied after the cache, so it is not part of the key, nor is
    the pool's kind (each kind gives the same FSAs for the same options); the
    options are fixed for a builder's life, so within one builder the key
    only separates the sources and texts (two builders never share a cache).
    The second epoch over a corpus that fits exports nothing.

    The intended loop prefetches batch i+1, then builds batch i and runs
    step i::

        builder = FsaBuilder(sprint_opts, tdp_scale=0.5)
        builder.prefetch(batches[0].tags)
        for i, batch in enumerate(batches):
            if i + 1 < len(batches):
                builder.prefetch(batches[i + 1].tags)  # returns at once
            fsa = builder.build_batch(batch.tags).to(device)  # waits for what is missing
            loss = fsa_loss(model(batch), batch.lengths, fsa).sum()
            ...

    ``prefetch`` exports on a background thread; ``build_batch`` exports
    what is neither cached nor under way itself and waits for the rest, so no
    segment is exported twice. What a prefetch fetched is held for the build
    that takes it, outside the cache (no cache bound, not even
    ``cache_bytes=0``, drops it first); from then on it is the build's, and
    cached as any export if it fits. The held results are bounded: one that
    ``PREFETCHES_KEPT`` (8) later prefetches did not ask for is dropped, so
    only a segment prefetched that long before its build is exported again.
    A segment that failed raises ``sprintrt.Error`` from the ``build_batch``
    that needs it, naming every failed segment and its cause; the batch's
    other segments are cached, and the builder keeps working (a failed
    segment is exported again when next asked for). An export interrupted
    by an exception in its thread (a Ctrl-C in a build, which raises it
    there; a MemoryError in the background) ends every segment it had
    begun, so nothing is left under way: a build that was waiting for one
    of them in another thread exports it itself, and the next build or
    prefetch exports it anew.

    Pickling keeps the options, the pool's kind (``in_process``) and the
    settings, not the pool, the background thread or the cache (which may be
    large, and another process would not share it); an unpickled builder
    makes its pool, of the same kind, when first used. In a
    forked child (a DataLoader worker with the "fork" start method) the
    builder notices the new pid and uses a pool of that process, keeping
    the cache and the held prefetch results it inherited. Thread-safe.

    ``stats()`` counts the lookups of the builds, one per segment a
    ``build_*`` call names (a repeat within a call is a hit): ``hits``
    (found in the cache) and ``misses`` (not found); of the misses,
    ``taken`` found a prefetch's result held for it (an FSA or a failure)
    and ``waits`` an export of the segment queued or under way (and waited
    for it, or did a queued one itself). A prefetch's lookups are not
    counted there: ``prefetched`` counts the segments prefetches queued. So
    an epoch over a cached corpus counts one hit per segment and nothing
    else, and a prefetched segment is a miss that was taken or waited for.
    ``exports`` counts the segments sent to the pool, ``failures`` the
    exports that failed (the segment's own error), ``cancelled`` those an
    interruption ended before their FSA arrived, ``evictions`` the cache
    entries dropped, ``dropped`` the held prefetch results dropped unbuilt;
    and it shows ``bytes``, ``entries``, ``cache_bytes``, ``held`` (prefetch
    results held now) and ``in_flight`` (exports queued or under way).
    """

    def __init__(self, sprint_opts=None, *, pool=None, in_process=False, tdp_scale=1.0,
                 layout="v1", cache_bytes=DEFAULT_CACHE_BYTES):
        if (sprint_opts is None) == (pool is None):
            raise ValueError("FsaBuilder needs either sprint_opts or pool (exactly one of them)")
        if not isinstance(in_process, bool):
            raise TypeError("in_process must be a bool, got %s" % type(in_process).__name__)
        if pool is not None:
            if not isinstance(pool, SprintInstancePool):
                raise TypeError("pool must be a sprintrt.SprintInstancePool, got %s"
                                % type(pool).__name__)
            if in_process:
                raise ValueError("in_process is for a builder from sprint_opts; a pool's workers "
                                 "are what they are (pool.in_process)")
            sprint_opts = pool.sprint_opts
            in_process = pool.in_process
        else:
            _check_sprint_opts(sprint_opts)
        if isinstance(tdp_scale, bool) or not isinstance(tdp_scale, numbers.Real):
            raise TypeError("tdp_scale must be a number, got %s" % type(tdp_scale).__name__)
        if layout not in _LAYOUTS:
            raise ValueError("layout must be 'v1' or 'v2', got %r" % (layout,))
        if isinstance(cache_bytes, bool) or not isinstance(cache_bytes, numbers.Integral):
            raise TypeError("cache_bytes must be an int, got %s" % type(cache_bytes).__name__)
        if cache_bytes < 0:
            raise ValueError("cache_bytes must not be negative, got %d" % cache_bytes)
        self._sprint_opts = _copy_opts(sprint_opts)
        self.in_process = in_process
        self.tdp_scale = float(tdp_scale)
        self.layout = layout
        self.cache_bytes = int(cache_bytes)
        self._start_afresh()
        self._pool = pool

    # --- pickling and forks ----------------------------------------------------

    def __getstate__(self):
        return {"sprint_opts": self._sprint_opts, "in_process": self.in_process,
                "tdp_scale": self.tdp_scale, "layout": self.layout,
                "cache_bytes": self.cache_bytes}

    def __setstate__(self, state):
        self._sprint_opts = _copy_opts(state["sprint_opts"])
        self.in_process = state["in_process"]
        self.tdp_scale = state["tdp_scale"]
        self.layout = state["layout"]
        self.cache_bytes = state["cache_bytes"]
        self._start_afresh()

    def _start_afresh(self):
        """A builder with an empty cache and counters, and no pool yet."""
        self._cache = collections.OrderedDict()  # key -> librasr's tuple, LRU first
        self._bytes = 0
        # key -> [number of the last prefetch that asked for it, librasr's
        # tuple or _Failure]: a background export's result, until a build
        # takes it or PREFETCHES_KEPT later prefetches did not ask for it.
        self._ready = {}
        self._prefetches = 0  # prefetch calls so far
        self._counts = dict.fromkeys(("hits", "misses", "taken", "waits", "prefetched", "exports",
                                      "failures", "cancelled", "evictions", "dropped"), 0)
        self._options_key = None
        self._forget_process()

    def _forget_process(self):
        """Drops what belongs to the process, not to the builder: the pool,
        the lock, the background thread and the exports under way (after a
        fork, none of them work in the child; the lock may even be held)."""
        self._pid = os.getpid()
        self._pool = None
        self._lock = threading.Lock()
        self._pending = {}  # key -> _Export, queued or under way
        self._queue = collections.deque()  # lists of keys for the background thread
        self._thread = None

    def _check_process(self):
        """Starts afresh (keeping the cache) in a forked child."""
        if os.getpid() != self._pid:
            self._forget_process()

    # --- the public calls --------------------------------------------------------

    @property
    def pool(self):
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
    def sprint_opts(self):
        """The pool's options (a copy)."""
        return _copy_opts(self._sprint_opts)

    def build_batch(self, tags):
        """The FSAs of the segments ``tags`` (str or bytes names, or an array
        of them, as ``SprintInstancePool`` takes tags) joined into the
        builder's layout, weights times ``tdp_scale``."""
        return self._build(self._keys(_SEGMENT, _tag_list(tags)))

    def build_batch_by_orthography(self, orthographies):
        """The FSAs of ``orthographies`` (str each; for sprint-sim, a label
        sequence as in its corpus file) joined into the builder's layout."""
        return self._build(self._keys(_ORTHOGRAPHY, _text_list(orthographies, "orthographies")))

    def build_single(self, tag):
        """One segment's FSA as librasr's tuple (num_states, num_edges, edges
        uint32 [3*E]: all from-states, all to-states, all emissions, weights
        float32 [E]), scaled as i6_models' builder of the layout returns it:
        in the V1 layout unscaled (``RasrFsaBuilder.build_single`` returns
        the raw FSA, its ``build_batched_fsa`` scales the joined batch), in
        V2 times ``tdp_scale`` (``RasrFsaBuilderV2``, whose join does not
        scale). Either way ``build_batch`` is what i6_models' builder makes
        of these. The arrays are the caller's."""
        return self._single(_SEGMENT, _text(tag, "tag"))

    def build_by_orthography(self, orthography):
        """The FSA of ``orthography``, scaled as ``build_single``'s: in V2
        times ``tdp_scale``, as ``RasrFsaBuilderByOrthography`` (a V2
        builder) returns it; in V1 unscaled (i6_models has no V1 builder by
        orthography: this keeps ``RasrFsaBuilder``'s convention, so that
        ``build_batch_by_orthography`` is the V1 join of these, scaled)."""
        return self._single(_ORTHOGRAPHY, _text(orthography, "orthography"))

    def prefetch(self, tags, *, by_orthography=False):
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
            queued = {}
            self._look_up(keys, True, collections.Counter(), queued)
            self._drop_stale()  # after the lookup, which keeps what this one asks for
            if not queued:
                return
            self._counts["prefetched"] += len(queued)
            self._queue.append(list(queued))
            if self._thread is None:
                thread = threading.Thread(target=self._serve_queue, name="sprintrt-fsa-prefetch",
                                          daemon=True)
                thread.start()  # if it cannot start, the builds export what it queued
                self._thread = thread

    def stats(self):
        """The cache's counters and size now (a dict; see the class)."""
        self._check_process()
        with self._lock:
            result = dict(self._counts)
            result.update(bytes=self._bytes, entries=len(self._cache),
                          cache_bytes=self.cache_bytes, held=len(self._ready),
                          in_flight=len(self._pending))
        return result

    # --- lookups and exports -------------------------------------------------------

    def _keys(self, source, texts):
        """The cache keys of ``texts`` of ``source``; a ValueError for none."""
        if not texts:
            raise ValueError("a batch needs at least one %s, got none" % source)
        if self._options_key is None:
            self._options_key = canonical_options(_options_json(self._sprint_opts))
        return [(self._options_key, source, text) for text in texts]

    def _look_up(self, keys, prefetch, counts, exports):
        """With the lock held: sorts the distinct keys of ``keys``, counting
        the lookups in ``counts``, and returns (found: key -> a cached FSA,
        or a prefetch's held result (FSA or ``_Failure``), which a build now
        takes; waited: key -> ``_Export`` under way elsewhere). It puts the
        keys this caller exports into ``exports`` (key -> ``_Export``),
        registered in ``_pending`` as it goes (so that whatever interrupts
        the caller, it can end them): started for a build, queued for a
        ``prefetch``. A prefetch takes nothing: what is held or exported in
        the background is marked as asked for by it."""
        found, waited = {}, {}
        seen = set()
        for key in keys:
            if key in seen:
                counts["hits"] += 1  # served by this call's first lookup of it
                continue
            seen.add(key)
            fsa = self._cache.get(key)
            if fsa is not None:
                self._cache.move_to_end(key)
                counts["hits"] += 1
                found[key] = fsa
                continue
            counts["misses"] += 1
            held = self._ready.get(key)
            if held is not None:
                if not prefetch:
                    counts["taken"] += 1
                    found[key] = held[1]
                    self._take(key, held[1])
                    continue
                if not isinstance(held[1], _Failure):
                    held[0] = self._prefetches
                    continue
                del self._ready[key]  # a failure: this prefetch exports it again
            export = self._pending.get(key)
            if export is None:
                export = self._pending[key] = _Export()
                if prefetch:
                    export.prefetch = self._prefetches
                else:
                    export.started = True
                exports[key] = export
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

    def _take(self, key, result):
        """With the lock held: ``result``, of a finished export of ``key``,
        is a build's: no longer held for another, cached if an FSA."""
        held = self._ready.get(key)
        if held is not None and held[1] is result:
            del self._ready[key]
        if not isinstance(result, _Failure):
            self._store(key, result)

    def _drop_stale(self):
        """With the lock held: drops the held results that the last
        ``PREFETCHES_KEPT`` prefetches did not ask for."""
        stale = [key for key, (number, _) in self._ready.items()
                 if self._prefetches - number >= PREFETCHES_KEPT]
        for key in stale:
            del self._ready[key]
        self._counts["dropped"] += len(stale)

    def _export(self, exports, background=False):
        """Exports the keys of ``exports`` (key -> its ``_Export``, registered
        in ``_pending`` and started by this caller; of one source) in one
        pool call and ends their exports: an FSA of a build's is cached, a
        background result held (``_end_export``). Returns key -> FSA or
        ``_Failure``. Whatever ends it early (the call fails: shut down,
        interrupted; an exception while the results are taken), every export
        not ended yet ends with that failure, which is raised (in the
        background: swallowed, the failure is the segments')."""
        keys = list(exports)
        results = {}
        failure = _Failure("invalid_message", "the pool's reply held no FSA for it")
        try:
            with self._lock:
                self._counts["exports"] += len(keys)
            items = self.pool.export_fsas([key[2] for key in keys], keys[0][1] == _ORTHOGRAPHY)
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

    def _end_exports(self, keys, items, exports, results, background, interruption=None):
        """Ends the exports of ``keys`` with the pool's ``items`` (one each:
        librasr's numbers or a ``sprintrt.Error``), into ``results``. After
        an ``interruption`` (a ``_Failure``), an item the stop cancelled ends
        with that instead: it says nothing about its segment."""
        with self._lock:
            for key, item in zip(keys, items):
                if isinstance(item, Error):
                    cancelled = getattr(item, "code", "") == "cancelled"
                    if interruption is not None and cancelled:
                        result = interruption
                    else:
                        result = _Failure.of_exception(item)
                else:
                    num_states, edges, weights = item
                    result = (num_states, len(weights), edges, weights)
                results[key] = result
                self._end_export(key, exports[key], result, background)

    def _end_unfinished(self, exports, failure, background):
        """Ends each export of ``exports`` (key -> ``_Export``) that has not
        ended with ``failure``."""
        with self._lock:
            for key, export in exports.items():
                if not export.done.is_set():
                    self._end_export(key, export, failure, background)

    def _end_export(self, key, export, result, background):
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
            if self._prefetches - export.prefetch < PREFETCHES_KEPT:
                self._ready[key] = [export.prefetch, result]
            else:
                self._counts["dropped"] += 1
        if self._pending.get(key) is export:
            del self._pending[key]
        export.result = result
        export.done.set()

    def _store(self, key, fsa):
        """With the lock held: caches ``fsa`` as most recently used (unless
        it is bigger than ``cache_bytes``: it would only empty the cache),
        then evicts the least recently used entries while over
        ``cache_bytes``."""
        if key in self._cache:  # cached meanwhile (two builds waited for it)
            self._cache.move_to_end(key)
            return
        size = _entry_bytes(fsa)
        if size > self.cache_bytes:
            return
        self._cache[key] = fsa
        self._bytes += size
        while self._bytes > self.cache_bytes:
            _, evicted = self._cache.popitem(last=False)
            self._bytes -= _entry_bytes(evicted)
            self._counts["evictions"] += 1

    def _serve_queue(self):
        """The background thread: exports the queued keys that nobody took
        over meanwhile, until the queue is empty. If anything ends it early,
        the keys it took end as interrupted and a later prefetch starts a new
        thread (what is still queued, it serves; a build does it itself)."""
        taken = {}
        try:
            while True:
                with self._lock:
                    taken = {}
                    if not self._queue:
                        self._thread = None
                        return
                    for key in self._queue.popleft():
                        export = self._pending.get(key)
                        if export is not None and not export.started:
                            export.started = True
                            taken[key] = export
                for source in (_SEGMENT, _ORTHOGRAPHY):
                    part = {key: export for key, export in taken.items() if key[1] == source}
                    if part:
                        self._export(part, background=True)
        finally:
            self._end_unfinished(taken, _Failure(
                "cancelled", "the prefetch thread ended before exporting it", interrupted=True),
                background=True)
            with self._lock:
                if self._thread is threading.current_thread():
                    self._thread = None

    def _fsas(self, keys):
        """key -> FSA for every key of ``keys``: from the cache, a prefetch's
        held result, this call's export, or exports under way; raises
        ``sprintrt.Error`` naming each one that failed. A key whose export
        under way was interrupted is looked up again (and exported by this
        call, unless another did it meanwhile); those lookups are not
        counted again."""
        self._check_process()
        results = {}
        todo, counts = keys, self._counts
        while todo:
            exports = {}
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
                if isinstance(result, _Failure) and result.interrupted:
                    todo.append(key)
                    continue
                with self._lock:
                    self._take(key, result)
                results[key] = result
        error = batch_error(keys, results)
        if error is not None:
            raise error
        return results

    def _build(self, keys):
        found = self._fsas(keys)
        return _LAYOUTS[self.layout]([found[key] for key in keys], self.tdp_scale)

    def _single(self, source, text):
        key, = self._keys(source, [text])
        num_states, num_edges, edges, weights = self._fsas([key])[key]
        if self.layout == "v2" and self.tdp_scale != 1.0:
            weights = weights * self.tdp_scale  # as i6_models' V2 builders scale each FSA
        else:
            weights = weights.copy()
        return num_states, num_edges, edges.copy(), weights
