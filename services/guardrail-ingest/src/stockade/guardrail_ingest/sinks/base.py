"""What every event store implements. ``write`` must be idempotent on ``event_id``: a redelivered batch, or
one whose first half was written before a worker died, ends with each event stored exactly once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class WriteOutcome:
    inserted: int
    duplicates: int


class SinkError(RuntimeError):
    """The store failed; the batch is not acknowledged and JetStream redelivers it."""


class EventSink(Protocol):
    kind: str

    async def ensure_schema(self) -> None:
        """Create the table/collection and the uniqueness guarantee on event_id if missing."""

    async def write(self, records: list[dict[str, Any]]) -> WriteOutcome:
        """Store records; events already stored count as duplicates, never as errors."""

    async def aclose(self) -> None: ...
