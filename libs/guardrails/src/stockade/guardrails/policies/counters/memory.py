"""In-memory counters: the default backend, for one process."""

from __future__ import annotations

import threading


class InMemoryCounterStore:
    """Counters in a dict under a lock (safe for threads and for tasks of one event loop)."""

    def __init__(self) -> None:
        self._values: dict[str, int] = {}
        self._lock = threading.Lock()

    async def add(self, key: str, amount: int, limit: int | None = None) -> tuple[bool, int]:
        with self._lock:
            current = self._values.get(key, 0)
            new = current + amount
            if limit is not None and new > limit:
                return False, current
            self._values[key] = new
            return True, new

    async def get(self, key: str) -> int:
        with self._lock:
            return self._values.get(key, 0)

    async def close(self) -> None:
        return None
