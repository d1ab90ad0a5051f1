"""``FsaBuilder``: batch FSAs for PyTorch training from a pool of Sprint
workers, cached per segment and prefetched in the background (see the class).
"""

import collections
import numbers
import os
import threading

from . import (Error, SprintInstancePool, _options_json, _tag_list, _text, _text_list,
               canonical_options)
from .fsa_layouts import join_fsas_v1, join_fsas_v2

__all__ = ["DEFAULT_CACHE_BYTES", "ENTRY_OVERHEAD_BYTES", "FsaBuilder"]

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

_LAYOUTS = {"v1": join_fsas_v1, "v2": join_fsas_v2}

# A cache key's source: what its text names.
_SEGMENT = "segment"
_ORTHOGRAPHY = "orthography"


class _Export:
    """One FSA export, queued or under way (``started``): whoever needs it
    waits on ``done``; then ``result`` is librasr's tuple or a ``_Failure``."""

    __slots__ = ("started", "done", "result")

    def __init__(self):
        self.started = False
        self.done = threading.Event()
        self.result = None


class _Failure:
    """Why an export failed: ``sprintrt.Error``'s code and message."""

    __slots__ = ("code", "message")

    def __init__(self, code, message):
        self.code = code
        self.message = message

    @classmethod
    def of_exception(cls, e):
        """The failure ``e`` (a ``sprintrt.Error`` item or a raised exception)
        says."""
        if isinstance(e, Error):
            return cls(getattr(e, "code", "unknown_error"), str(e))
        return cls("cancelled", "the export was interrupted (%s: %s)" % (type(e).__name__, e))


def _describe(key):
    """How messages name the FSA of ``key``: "segment 'x'" or "orthography 'x'"."""
    return "%s '%s'" % (key[1], key[2])


def _named(key, message):
    """``message`` about the FSA of ``key``, prefixed with its name unless it
    names it already (the pool's errors about a reply do)."""
    name = _describe(key)
    return message if name in message else "%s: %s" % (name, message)


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
    (``DEFAULT_CACHE_BYTES``, 1 GiB; 0 caches nothing).

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

    The intended loop prefetches the next batch, then runs the current step::

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
    segment is exported twice. A segment that failed raises ``sprintrt.Error``
    from the ``build_batch`` that needs it, naming every failed segment and
    its cause; the batch's other segments are cached, and the builder keeps
    working (a failed segment is exported again when next asked for).

    Pickling keeps the options, the pool's kind (``in_process``) and the
    settings, not the pool, the background thread or the cache (which may be
    large, and another process would not share it); an unpickled builder
    makes its pool, of the same kind, when first used. In a
    forked child (a DataLoader worker with the "fork" start method) the
    builder notices the new pid and uses a pool of that process, keeping
    the cache it inherited. Thread-safe.

    ``stats()`` counts the lookups of the builds, one per segment a
    ``build_*`` call names (a repeat within a call is a hit): ``hits``
    (found in the cache, a prefetched segment included once its export is
    done) and ``misses`` (not found); of the misses, ``waits`` found an
    export of the segment already queued or under way (and waited for it,
    or did a queued one itself). A prefetch's lookups are not counted there:
    ``prefetched`` counts the segments prefetches queued. So an epoch over a
    cached corpus counts one hit per segment and nothing else. ``exports``
    counts the segments sent to the pool, ``failures`` the exports that
    failed, ``evictions`` the entries dropped; and it shows ``bytes``,
    ``entries``, ``cache_bytes`` and ``in_flight`` (exports queued or under
    way).
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
        elif not isinstance(sprint_opts, dict):
            raise TypeError("sprint_opts must be a dict, got %s" % type(sprint_opts).__name__)
        if isinstance(tdp_scale, bool) or not isinstance(tdp_scale, numbers.Real):
            raise TypeError("tdp_scale must be a number, got %s" % type(tdp_scale).__name__)
        if layout not in _LAYOUTS:
            raise ValueError("layout must be 'v1' or 'v2', got %r" % (layout,))
        if isinstance(cache_bytes, bool) or not isinstance(cache_bytes, numbers.Integral):
            raise TypeError("cache_bytes must be an int, got %s" % type(cache_bytes).__name__)
        if cache_bytes < 0:
            raise ValueError("cache_bytes must not be negative, got %d" % cache_bytes)
        self._sprint_opts = dict(sprint_opts)
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
        self._sprint_opts = dict(state["sprint_opts"])
        self.in_process = state["in_process"]
        self.tdp_scale = state["tdp_scale"]
        self.layout = state["layout"]
        self.cache_bytes = state["cache_bytes"]
        self._start_afresh()

    def _start_afresh(self):
        """A builder with an empty cache and counters, and no pool yet."""
        self._cache = collections.OrderedDict()  # key -> librasr's tuple, LRU first
        self._bytes = 0
        self._counts = dict.fromkeys(("hits", "misses", "waits", "prefetched", "exports",
                                      "failures", "evictions"), 0)
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
        self._failed = {}  # key -> _Failure of a background export, for the next build
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
        return dict(self._sprint_opts)

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
        float32 [E]), weights times ``tdp_scale`` as i6_models' V2 builders
        return it; the arrays are the caller's."""
        return self._single(_SEGMENT, _text(tag, "tag"))

    def build_by_orthography(self, orthography):
        """The FSA of ``orthography`` as ``build_single`` returns one."""
        return self._single(_ORTHOGRAPHY, _text(orthography, "orthography"))

    def prefetch(self, tags, *, by_orthography=False):
        """Starts exporting the FSAs of ``tags`` (orthographies if
        ``by_orthography``) that are neither cached nor under way, on a
        background thread, and returns at once. Its errors are raised by the
        ``build_batch`` that needs the segment."""
        if by_orthography:
            keys = self._keys(_ORTHOGRAPHY, _text_list(tags, "tags"))
        else:
            keys = self._keys(_SEGMENT, _tag_list(tags))
        self._check_process()
        with self._lock:
            queued = self._look_up(keys, queue=True)[1]
            if not queued:
                return
            self._counts["prefetched"] += len(queued)
            self._queue.append(queued)
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve_queue,
                                                name="sprintrt-fsa-prefetch", daemon=True)
                self._thread.start()

    def stats(self):
        """The cache's counters and size now (a dict; see the class)."""
        self._check_process()
        with self._lock:
            result = dict(self._counts)
            result.update(bytes=self._bytes, entries=len(self._cache),
                          cache_bytes=self.cache_bytes, in_flight=len(self._pending))
        return result

    # --- lookups and exports -------------------------------------------------------

    def _keys(self, source, texts):
        """The cache keys of ``texts`` of ``source``; a ValueError for none."""
        if not texts:
            raise ValueError("a batch needs at least one %s, got none" % source)
        if self._options_key is None:
            self._options_key = canonical_options(_options_json(self._sprint_opts))
        return [(self._options_key, source, text) for text in texts]

    def _look_up(self, keys, queue):
        """With the lock held: sorts the distinct keys of ``keys`` and counts
        the lookups (a build's; a prefetch, ``queue``, counts only what it
        queued). Returns (found: key -> FSA, to_export: keys this caller
        exports, waited: key -> _Export under way elsewhere, failed: key ->
        ``_Failure`` of a background export, now forgotten). With
        ``queue``, to_export's keys are registered as queued, not started."""
        found, to_export, waited, failed = {}, [], {}, {}
        seen = set()
        # A prefetch's lookups go to a scratch count.
        counts = collections.Counter() if queue else self._counts
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
            if key in self._failed and not queue:
                failed[key] = self._failed.pop(key)
                continue
            self._failed.pop(key, None)
            export = self._pending.get(key)
            if export is None:
                export = self._pending[key] = _Export()
                export.started = not queue
                to_export.append(key)
                continue
            counts["waits"] += 1
            if export.started or queue:
                waited[key] = export
            else:
                # Queued, not yet under way: this call exports it itself, so
                # that it waits for nothing queued before it.
                export.started = True
                to_export.append(key)
        return found, to_export, waited, failed

    def _export(self, keys, background=False):
        """Exports ``keys`` (registered in ``_pending``, of one source) in one
        pool call, caches what came back and ends their exports. Returns
        key -> FSA or ``_Failure``. If the call itself fails (shut down,
        interrupted), every export ends with its error, which is raised
        (in the background: kept like every failure there, for the build
        that needs the key)."""
        by_orthography = keys[0][1] == _ORTHOGRAPHY
        try:
            items = self.pool.export_fsas([key[2] for key in keys], by_orthography)
        except BaseException as e:
            failure = _Failure.of_exception(e)
            with self._lock:
                self._counts["exports"] += len(keys)
                self._counts["failures"] += len(keys)
                for key in keys:
                    self._end_export(key, failure, background)
            if background:
                return {key: failure for key in keys}
            raise
        results = {}
        with self._lock:
            self._counts["exports"] += len(keys)
            for key, item in zip(keys, items):
                if isinstance(item, Error):
                    self._counts["failures"] += 1
                    results[key] = _Failure.of_exception(item)
                else:
                    num_states, edges, weights = item
                    results[key] = (num_states, len(weights), edges, weights)
                    self._store(key, results[key])
                self._end_export(key, results[key], background)
        return results

    def _end_export(self, key, result, background):
        """With the lock held: ends the export of ``key`` with ``result`` (an
        FSA or a ``_Failure``, which is kept for the next build that needs
        ``key`` if the export ran in the background) and wakes its waiters."""
        if background and isinstance(result, _Failure):
            self._failed[key] = result
        export = self._pending.pop(key, None)
        if export is not None:
            export.result = result
            export.done.set()

    def _store(self, key, fsa):
        """With the lock held: caches ``fsa`` as most recently used, then
        evicts the least recently used entries while over ``cache_bytes``."""
        if self.cache_bytes == 0:
            return
        self._cache[key] = fsa
        self._bytes += _entry_bytes(fsa)
        while self._bytes > self.cache_bytes:
            _, evicted = self._cache.popitem(last=False)
            self._bytes -= _entry_bytes(evicted)
            self._counts["evictions"] += 1

    def _serve_queue(self):
        """The background thread: exports the queued keys that nobody took
        over meanwhile, until the queue is empty."""
        while True:
            with self._lock:
                if not self._queue:
                    self._thread = None
                    return
                keys = []
                for key in self._queue.popleft():
                    export = self._pending.get(key)
                    if export is not None and not export.started:
                        export.started = True
                        keys.append(key)
            for source in (_SEGMENT, _ORTHOGRAPHY):
                part = [key for key in keys if key[1] == source]
                if part:
                    self._export(part, background=True)

    def _fsas(self, keys):
        """key -> FSA for every key of ``keys``: from the cache, this call's
        export, or exports under way; raises ``sprintrt.Error`` naming each
        one that failed."""
        self._check_process()
        with self._lock:
            found, to_export, waited, failed = self._look_up(keys, queue=False)
        results = dict(failed)
        results.update(found)
        if to_export:
            results.update(self._export(to_export))
        for key, export in waited.items():
            export.done.wait()
            results[key] = export.result
            if isinstance(export.result, _Failure):
                # Raised here: the next build exports the key again.
                with self._lock:
                    self._failed.pop(key, None)
        distinct = list(dict.fromkeys(keys))
        failed_keys = [key for key in distinct if isinstance(results[key], _Failure)]
        if failed_keys:
            error = Error("%d of the %d FSAs failed: %s" % (
                len(failed_keys), len(distinct),
                "; ".join(_named(key, results[key].message) for key in failed_keys)))
            error.code = results[failed_keys[0]].code
            raise error
        return results

    def _build(self, keys):
        found = self._fsas(keys)
        return _LAYOUTS[self.layout]([found[key] for key in keys], self.tdp_scale)

    def _single(self, source, text):
        num_states, num_edges, edges, weights = self._fsas(self._keys(source, [text]))[
            (self._options_key, source, text)]
        weights = weights * self.tdp_scale if self.tdp_scale != 1.0 else weights.copy()
        return num_states, num_edges, edges.copy(), weights

