"""The counter store protocol rate limiting needs: an atomic bounded add."""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class CounterStore(Protocol):
    """Integer counters keyed by string; every update is atomic across all users of the store."""

    async def add(self, key: str, amount: int, limit: int | None = None) -> tuple[bool, int]:
        """Add ``amount`` unless the result would exceed ``limit``.

        Returns ``(applied, value)``: the new value when applied, else the unchanged current value.
        """
        ...

    async def get(self, key: str) -> int:
        """Current value (0 for a key never written)."""
        ...

    async def close(self) -> None:
        """Release connections the store opened itself."""
        ...
