"""A least-recently-used map bounded by the bytes of its values (the cache
of ``FsaBuilder``)."""

from __future__ import annotations

import collections
from collections.abc import Hashable
from typing import Callable, Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class ByteBoundedLru(Generic[K, V]):
    """Values by key, least recently used first out once their sizes
    (``size_of`` of each) sum to more than the bound a ``store`` names. Not
    locked: its owner calls it under its own lock."""

    __slots__ = ("_entries", "_size_of", "bytes")

    def __init__(self, size_of: Callable[[V], int]) -> None:
        self._entries: collections.OrderedDict[K, V] = collections.OrderedDict()
        self._size_of = size_of
        #: The sizes of the values held now, summed.
        self.bytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: K) -> V | None:
        """The value of ``key``, now the most recently used; None if absent."""
        value = self._entries.get(key)
        if value is not None:
            self._entries.move_to_end(key)
        return value

    def store(self, key: K, value: V, capacity: int) -> int:
        """Holds ``value`` as most recently used (unless it is bigger than
        ``capacity``: it would only empty the map; a key held already is
        only marked used), then drops the least recently used entries while
        over ``capacity``. Returns how many it dropped."""
        if key in self._entries:
            self._entries.move_to_end(key)
            return 0
        size = self._size_of(value)
        if size > capacity:
            return 0
        self._entries[key] = value
        self.bytes += size
        evicted = 0
        while self.bytes > capacity:
            _, dropped = self._entries.popitem(last=False)
            self.bytes -= self._size_of(dropped)
            evicted += 1
        return evicted
