"""What every event store implements. ``write`` must be idempotent on ``event_id``: a redelivered batch, or
one whose first half was written before a worker died, ends with each event stored exactly once."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

REASON_CHARS = 500
"""A store's refusal is quoted up to this many characters (it lands in the dead-letter stream)."""

T = TypeVar("T")


@dataclass(frozen=True)
class WriteOutcome:
    inserted: int
    duplicates: int
    rejected: dict[str, str] = field(default_factory=dict)
    """event_id -> the store's reason, for records the store refused one by one (a NUL in a MongoDB key, a
    DynamoDB item over 400 KB, a row a ClickHouse constraint refuses). Every other record of the write is
    stored; the worker retries the refused ones and dead-letters them after ``dead_letter_after`` deliveries."""


def reason(store: str, exc: BaseException) -> str:
    """``store: ExceptionType: message``, bounded to REASON_CHARS."""
    text = f"{store}: {type(exc).__name__}: {exc}"
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 3] + "..."


def encode_each(
    store: str, records: list[dict[str, Any]], encode: Callable[[dict[str, Any]], T]
) -> tuple[list[dict[str, Any]], list[T], dict[str, str]]:
    """``(kept, encoded, rejected)``: the records ``encode`` took, in order, with what it made of each, and the
    malformed ones (``encode`` raised KeyError, TypeError or ValueError: no redelivery mends them) by event_id
    with their reason."""
    kept: list[dict[str, Any]] = []
    encoded: list[T] = []
    rejected: dict[str, str] = {}
    for record in records:
        try:
            encoded.append(encode(record))
            kept.append(record)
        except (KeyError, TypeError, ValueError) as exc:
            rejected[str(record.get("event_id"))] = reason(store, exc)
    return kept, encoded, rejected


class SinkError(RuntimeError):
    """The store failed; the batch is not acknowledged and JetStream redelivers it."""


class EventSink(Protocol):
    kind: str

    async def ensure_schema(self) -> None:
        """Create the table/collection and the uniqueness guarantee on event_id if missing."""

    async def write(self, records: list[dict[str, Any]], *, maybe_stored: bool = False) -> WriteOutcome:
        """Store records; events already stored count as duplicates, never as errors. ``maybe_stored`` is true when
        the records come from a batch delivered before (some may be stored): a store that skips looking up ids on a
        first delivery must look them up then. A record the store refuses
        on its own goes into ``rejected``; SinkError means the store itself failed (nothing to blame a record
        for), and the whole write is retried."""

    async def aclose(self) -> None: ...
