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


class ResponseCache:
    """Thread-safe map from a read's identity (never the key) to its last good copy."""

    def __init__(self) -> None:
        self._entries: dict[CacheKey, CachedEntry] = {}
        self._lock = threading.Lock()

    def get(self, key: CacheKey) -> CachedEntry | None:
        with self._lock:
            return self._entries.get(key)

    def put(self, key: CacheKey, value: Any, etag: str | None) -> None:
        with self._lock:
            self._entries[key] = CachedEntry(value, etag)

    def confirm(self, key: CacheKey) -> None:
        """A 304 confirmed the copy: it is current again."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                entry.confirmed_at = time.monotonic()
                entry.invalidated = False

    def invalidate(self, key: CacheKey) -> bool:
        """Mark a copy out of date (kept as the last good copy); True if there was one."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return False
            entry.invalidated = True
            return True

    def invalidate_all(self) -> None:
        with self._lock:
            for entry in self._entries.values():
                entry.invalidated = True

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


def prompt_key(project_id: str, prompt_name: str) -> CacheKey:
    return ("prompt", project_id, prompt_name)


def policy_key(project_id: str, policy_name: str) -> CacheKey:
    return ("policy", project_id, policy_name)
