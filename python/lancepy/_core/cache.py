"""A least-recently-used cache with a byte budget and hit / miss counters: what a
:class:`lancepy.session.Session` holds twice (index data, dataset metadata).

An entry is kept only if it fits the budget on its own; putting one evicts the least
recently used entries until the total fits again. A budget of 0 keeps nothing (every
lookup misses). Thread-safe.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Hashable, Optional, Tuple

from lancepy.exceptions import InvalidArgumentError


def _budget(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidArgumentError(f"{name} must be a non-negative int (bytes), got {value!r}")
    return value


class ByteLruCache:
    """Entries ``key -> (value, nbytes)``, at most `capacity` bytes in all."""

    def __init__(self, capacity: int, name: str = "capacity") -> None:
        self.capacity = _budget(name, capacity)
        self._entries: "OrderedDict[Hashable, Tuple[Any, int]]" = OrderedDict()
        self._size = 0
        self._hits = 0
        self._misses = 0
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Optional[Any]:
        """The value under `key` (now the most recently used), or ``None``: a hit or a miss."""
        with self._lock:
            got = self._entries.get(key)
            if got is None:
                self._misses += 1
                return None
            self._hits += 1
            self._entries.move_to_end(key)
            return got[0]

    def put(self, key: Hashable, value: Any, nbytes: int) -> None:
        """Keeps `value` if `nbytes` fit the budget, evicting the least recently used."""
        nbytes = max(0, int(nbytes))
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._size -= old[1]
            if nbytes > self.capacity:
                return
            self._entries[key] = (value, nbytes)
            self._size += nbytes
            while self._size > self.capacity:
                _, (_, n) = self._entries.popitem(last=False)
                self._size -= n

    def get_or_load(self, key: Hashable, load: Any, size_of: Any) -> Any:
        """The value under `key`, or ``load()`` (kept with ``size_of(value)`` bytes)."""
        got = self.get(key)
        if got is None:
            got = load()
            self.put(key, got, size_of(got))
        return got

    @property
    def size_bytes(self) -> int:
        with self._lock:
            return self._size

    @property
    def entry_count(self) -> int:
        with self._lock:
            return len(self._entries)

    @property
    def hits(self) -> int:
        return self._hits

    @property
    def misses(self) -> int:
        return self._misses

    def hit_rate(self) -> float:
        """Hits / lookups so far (0.0 before any lookup)."""
        with self._lock:
            total = self._hits + self._misses
            return self._hits / total if total else 0.0
