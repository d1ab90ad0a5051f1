"""The background thread of an ``FsaBuilder``'s prefetches: it exports what
they queued, one source at a time, until the queue is empty."""

from __future__ import annotations

import threading
from typing import Callable

from ._fsa_store import FsaStore
from .fsa_exports import FsaKey, _Export, _Failure

# A cache key's source: what its text names.
SEGMENT = "segment"
ORTHOGRAPHY = "orthography"


class Prefetcher:
    """Serves the queue of ``store``'s exports on a thread of its own,
    through ``export`` (which exports a dict key -> ``_Export`` of one
    source in the background and ends each export)."""

    def __init__(self, store: FsaStore,
                 export: Callable[[dict[FsaKey, _Export]], object]) -> None:
        self._store = store
        self._export = export
        #: The thread while it runs (None once its queue was empty).
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        """With the store's lock held: starts the thread unless it runs. If it
        cannot start, the builds export what was queued."""
        if self.thread is None:
            thread = threading.Thread(target=self._serve_queue, name="sprintrt-fsa-prefetch",
                                      daemon=True)
            thread.start()
            self.thread = thread

    def _serve_queue(self) -> None:
        """Exports the queued keys that nobody took over meanwhile, until the
        queue is empty. If anything ends it early, the keys it took end as
        interrupted and a later prefetch starts a new thread (what is still
        queued, it serves; a build does it itself)."""
        store = self._store
        taken: dict[FsaKey, _Export] = {}
        try:
            while True:
                with store.lock:
                    taken = {}
                    queued = store.in_flight.take_queued()
                    if queued is None:
                        self.thread = None
                        return
                    taken = queued
                for source in (SEGMENT, ORTHOGRAPHY):
                    part = {key: export for key, export in taken.items() if key.source == source}
                    if part:
                        self._export(part)
        finally:
            with store.lock:
                store.end_unfinished(taken, _Failure(
                    "cancelled", "the prefetch thread ended before exporting it",
                    interrupted=True), background=True)
                if self.thread is threading.current_thread():
                    self.thread = None
