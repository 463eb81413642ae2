"""The in-process cache: the last good copy of each read, its ETag, and whether push keeps it trusted."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

CacheKey = tuple[str, ...]


@dataclass
class CachedEntry:
    """A read answer as last received: the parsed value, its ETag, and when it was last confirmed."""

    value: Any
    etag: str | None
    confirmed_at: float = field(default_factory=time.monotonic)
    invalidated: bool = False


# invalidation marks kept per key; past this many, they fold into one mark for every key (bounded memory,
# and the only cost is one extra revalidation for the reads that were in flight)
MAX_MARKS = 10_000


class ResponseCache:
    """Thread-safe map from a read's identity (never the key) to its last good copy.

    An answer may arrive after an invalidation that happened while its request was on the way (a refresh sent
    before our own publish answers 304 after it). Such an answer must not make the copy current again: each
    read takes a ``stamp()`` before it is sent, and ``put``/``confirm`` with that stamp keep the copy
    invalidated when the key was invalidated after it."""

    def __init__(self) -> None:
        self._entries: dict[CacheKey, CachedEntry] = {}
        self._lock = threading.Lock()
        self._clock = 0
        self._marks: dict[CacheKey, int] = {}
        self._all_mark = 0

    def stamp(self) -> int:
        """The invalidation clock now: take it before sending a read, pass it to ``put``/``confirm``."""
        with self._lock:
            return self._clock

    def _invalidated_since(self, key: CacheKey, stamp: int | None) -> bool:
        if stamp is None:
            return False
        return max(self._marks.get(key, 0), self._all_mark) > stamp

    def _mark(self, key: CacheKey) -> None:
        self._clock += 1
        self._marks.pop(key, None)
        self._marks[key] = self._clock
        if len(self._marks) > MAX_MARKS:
            self._marks.clear()
            self._all_mark = self._clock

    def get(self, key: CacheKey) -> CachedEntry | None:
        with self._lock:
            return self._entries.get(key)

    def put(self, key: CacheKey, value: Any, etag: str | None, stamp: int | None = None) -> None:
        """Store an answer; one whose request went out before the key's latest invalidation stays invalidated."""
        with self._lock:
            self._entries[key] = CachedEntry(value, etag, invalidated=self._invalidated_since(key, stamp))

    def confirm(self, key: CacheKey, stamp: int | None = None) -> None:
        """A 304 confirmed the copy: it is current again, unless it was invalidated after the request left."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                entry.confirmed_at = time.monotonic()
                entry.invalidated = self._invalidated_since(key, stamp)

    def invalidate(self, key: CacheKey) -> bool:
        """Mark a copy out of date (kept as the last good copy); True if there was one."""
        with self._lock:
            self._mark(key)
            entry = self._entries.get(key)
            if entry is None:
                return False
            entry.invalidated = True
            return True

    def invalidate_all(self) -> None:
        with self._lock:
            self._clock += 1
            self._all_mark = self._clock
            self._marks.clear()
            for entry in self._entries.values():
                entry.invalidated = True

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


def prompt_key(project_id: str, prompt_name: str) -> CacheKey:
    return ("prompt", project_id, prompt_name)


def policy_key(project_id: str, policy_name: str) -> CacheKey:
    return ("policy", project_id, policy_name)
