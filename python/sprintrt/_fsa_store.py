"""What an ``FsaBuilder`` knows of its FSAs, under one lock: the cache, the
results of background exports held for the builds that take them, the
exports queued or under way, and the counters of ``FsaBuilder.stats``."""

from __future__ import annotations

import collections
import threading
from collections.abc import Iterator, MutableMapping, Sequence

from ._lru import ByteBoundedLru
from .fsa_exports import ExportResult, Fsa, FsaKey, _Export, _Failure, _InFlight

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


class BuildLookup:
    """What a build's lookup found, filled in as it goes (so that whatever
    interrupts the lookup, the build can end the exports it registered):
    ``found``, key -> a cached FSA or a prefetch's held result (FSA or
    ``_Failure``), which the build now takes; ``waited``, key -> an export
    under way elsewhere; ``exports``, key -> an export the build makes
    itself, registered in flight and started."""

    __slots__ = ("found", "waited", "exports")

    def __init__(self) -> None:
        self.found: dict[FsaKey, ExportResult] = {}
        self.waited: dict[FsaKey, _Export] = {}
        self.exports: dict[FsaKey, _Export] = {}


class FsaStore:
    """A builder's FSAs and exports. Every method expects ``lock`` held (and
    ``forget_process`` that nothing else runs)."""

    def __init__(self, cache_bytes: int) -> None:
        self.cache_bytes = cache_bytes
        self._cache: ByteBoundedLru[FsaKey, Fsa] = ByteBoundedLru(_entry_bytes)
        # A background export's result, until a build takes it or
        # PREFETCHES_KEPT later prefetches did not ask for it.
        self._ready: dict[FsaKey, _Held] = {}
        self._prefetches = 0  # prefetch calls so far
        self.counts = dict.fromkeys(("hits", "misses", "taken", "waits", "prefetched", "exports",
                                     "failures", "cancelled", "evictions", "dropped"), 0)
        self.forget_process()

    def forget_process(self) -> None:
        """Drops what belongs to the process, not to the store: the lock and
        the exports under way (after a fork, neither works in the child; the
        lock may even be held). The cache and held results stay."""
        self.lock = threading.Lock()
        self.in_flight = _InFlight()

    def stats(self) -> dict[str, int]:
        """The counters, and the cache's size now."""
        result = dict(self.counts)
        result.update(bytes=self._cache.bytes, entries=len(self._cache),
                      cache_bytes=self.cache_bytes, held=len(self._ready),
                      in_flight=len(self.in_flight))
        return result

    # --- lookups -------------------------------------------------------------------

    def look_up_for_build(self, keys: Sequence[FsaKey], counts: MutableMapping[str, int],
                          lookup: BuildLookup) -> None:
        """Sorts the distinct keys of ``keys`` for a build into ``lookup``,
        counting the lookups in ``counts``. A key queued for the background
        but not under way yet is exported by the build itself, so that it
        waits for nothing queued before it."""
        for key in self._misses(keys, counts, lookup.found):
            held = self._ready.get(key)
            if held is not None:
                counts["taken"] += 1
                lookup.found[key] = held.result
                self.take(key, held.result)
                continue
            export = self.in_flight.get(key)
            if export is None:
                lookup.exports[key] = self.in_flight.register(key, None)
                continue
            counts["waits"] += 1
            if export.started:
                lookup.waited[key] = export
            else:
                export.started = True
                lookup.exports[key] = export

    def look_up_for_prefetch(self, keys: Sequence[FsaKey]) -> dict[FsaKey, _Export]:
        """Counts a new prefetch of ``keys`` and returns the exports it
        queues (key -> ``_Export``, registered in flight) for the keys that
        are neither cached, held nor in flight. What is held or in flight
        already is marked as asked for by this prefetch, but a held failure
        is exported again. The lookups are not counted (the build's are).
        Then drops the held results that the last ``PREFETCHES_KEPT``
        prefetches did not ask for."""
        self._prefetches += 1
        queued: dict[FsaKey, _Export] = {}
        for key in self._misses(keys, collections.Counter(), {}):
            held = self._ready.get(key)
            if held is not None:
                if not isinstance(held.result, _Failure):
                    held.prefetch = self._prefetches
                    continue
                del self._ready[key]
            export = self.in_flight.get(key)
            if export is None:
                queued[key] = self.in_flight.register(key, self._prefetches)
                continue
            if export.prefetch is not None:
                export.prefetch = self._prefetches
        self._drop_stale()  # after the lookup, which keeps what this one asks for
        self.counts["prefetched"] += len(queued)
        return queued

    def _misses(self, keys: Sequence[FsaKey], counts: MutableMapping[str, int],
                found: dict[FsaKey, ExportResult]) -> Iterator[FsaKey]:
        """Yields the distinct keys of ``keys`` that are not cached, in order
        and one at a time (what the caller does with one, taking a held
        result into the cache, may evict a later one); the cached ones go
        into ``found``. Every key of ``keys`` counts as a hit (cached, or
        served by this lookup's first sight of it) or a miss."""
        seen = set()
        for key in keys:
            if key in seen:
                counts["hits"] += 1
                continue
            seen.add(key)
            fsa = self._cache.get(key)
            if fsa is not None:
                counts["hits"] += 1
                found[key] = fsa
                continue
            counts["misses"] += 1
            yield key

    # --- results -------------------------------------------------------------------

    def take(self, key: FsaKey, result: ExportResult) -> None:
        """``result``, of a finished export of ``key``, is a build's: no
        longer held for another, cached if an FSA."""
        held = self._ready.get(key)
        if held is not None and held.result is result:
            del self._ready[key]
        if not isinstance(result, _Failure):
            self._store(key, result)

    def end_export(self, key: FsaKey, export: _Export, result: ExportResult,
                   background: bool) -> None:
        """Ends ``export`` of ``key`` with ``result`` (an FSA or a
        ``_Failure``) and wakes its waiters. A build's FSA is cached; a
        background result is held for the build that takes it, unless it was
        interrupted (it says nothing about the segment) or
        ``PREFETCHES_KEPT`` prefetches have passed since one asked for it."""
        if isinstance(result, _Failure):
            self.counts["cancelled" if result.interrupted else "failures"] += 1
        elif not background:
            self._store(key, result)
        if background and not (isinstance(result, _Failure) and result.interrupted):
            assert export.prefetch is not None  # a background export is a prefetch's
            if self._prefetches - export.prefetch < PREFETCHES_KEPT:
                self._ready[key] = _Held(export.prefetch, result)
            else:
                self.counts["dropped"] += 1
        self.in_flight.end(key, export, result)

    def end_unfinished(self, exports: dict[FsaKey, _Export], failure: _Failure,
                       background: bool) -> None:
        """Ends each export of ``exports`` (key -> ``_Export``) that has not
        ended with ``failure``."""
        for key, export in exports.items():
            if not export.done.is_set():
                self.end_export(key, export, failure, background)

    def _drop_stale(self) -> None:
        """Drops the held results that the last ``PREFETCHES_KEPT``
        prefetches did not ask for."""
        stale = [key for key, held in self._ready.items()
                 if self._prefetches - held.prefetch >= PREFETCHES_KEPT]
        for key in stale:
            del self._ready[key]
        self.counts["dropped"] += len(stale)

    def _store(self, key: FsaKey, fsa: Fsa) -> None:
        """Caches ``fsa`` (see ``ByteBoundedLru.store``; one bigger than
        ``cache_bytes`` is not cached)."""
        self.counts["evictions"] += self._cache.store(key, fsa, self.cache_bytes)
