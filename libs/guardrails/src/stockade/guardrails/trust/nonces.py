"""Nonce stores for layer B replay protection.

A store answers one question atomically: "is this the first time I see this nonce?" (:meth:`NonceStore.claim`).
A store that cannot answer raises :class:`~stockade.guardrails.errors.AttestationError`; verification then fails
closed (the message is never accepted on an unknown replay status).
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from stockade.guardrails.errors import AttestationError


@runtime_checkable
class NonceStore(Protocol):
    async def claim(self, key: str, expires_at: float) -> bool:
        """Record ``key`` until ``expires_at`` (Unix seconds). True if it was new, False if already seen."""
        ...


class InMemoryNonceStore:
    """One process's nonces: bounded and expiring. Not shared between replicas (use JetStreamNonceStore).

    When ``max_entries`` unexpired nonces are held, a new claim raises AttestationError rather than forgetting
    a nonce early (forgetting would let a replay through).
    """

    def __init__(self, max_entries: int = 100_000, clock: Callable[[], float] = time.time) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self._max = max_entries
        self._clock = clock
        self._expiry: dict[str, float] = {}
        self._heap: list[tuple[float, str]] = []

    def __len__(self) -> int:
        self._evict(self._clock())
        return len(self._expiry)

    async def claim(self, key: str, expires_at: float) -> bool:
        now = self._clock()
        self._evict(now)
        if key in self._expiry:
            return False
        if len(self._expiry) >= self._max:
            raise AttestationError(f"nonce store full ({self._max} unexpired nonces); refusing to forget any")
        self._expiry[key] = expires_at
        heapq.heappush(self._heap, (expires_at, key))
        return True

    def _evict(self, now: float) -> None:
        while self._heap and self._heap[0][0] < now:
            _, key = heapq.heappop(self._heap)
            if self._expiry.get(key, now + 1) < now:
                del self._expiry[key]
