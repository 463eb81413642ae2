"""Cut an accepted batch into JetStream messages that each fit under the server's ``max_payload``.

The run fields (labels above all) are copied onto every stored record, so a small POST can grow many times over
once queued: 500 events under 64 labels of 256 characters are about 10 MB of records. NATS refuses a message over
its ``max_payload`` (1 MB by default), so the records are packed greedily, in order, into parts of at most
``limit`` bytes. Each part gets its own deterministic id (the same function of its event ids as a whole batch),
so a retried POST publishes the same parts and JetStream drops the copies. A record that alone does not fit is
refused with :class:`EventTooLargeError` (413 at the edge) before anything is published.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from pydantic_core import to_json

from stockade.contracts import GuardrailEventsReceived
from stockade.guardrail_ingest.records import records_id

HEADROOM_BYTES = 1024
"""Kept free under ``max_payload`` for the NATS headers (Nats-Msg-Id, schema version, expected stream)."""


@dataclass(frozen=True)
class EventTooLargeError(ValueError):
    """One event, with the run fields copied onto it, is larger than a queued message may be."""

    event_id: str
    size: int
    limit: int
    payload_bytes: int
    labels_bytes: int

    def __str__(self) -> str:
        return (
            f"event {self.event_id} is {self.size} bytes once stored (its payload {self.payload_bytes} bytes, "
            f"the run's labels {self.labels_bytes} bytes, copied onto every event); one queued message holds "
            f"at most {self.limit} bytes: shrink this event's payload or the run's labels, then resend"
        )


def message_limit(max_payload: int) -> int:
    """Bytes one message body may take on a server announcing ``max_payload``."""
    return max(max_payload - HEADROOM_BYTES, 1)


def split_batch(
    records: list[dict[str, Any]], *, db_type: str, correlation_id: str | None, limit: int
) -> list[GuardrailEventsReceived]:
    """Messages of at most ``limit`` bytes each, holding ``records`` in order; one message when they fit."""
    whole = _message(records, db_type, correlation_id)
    if len(whole.to_bytes()) <= limit:  # the common case: one serialisation, no sizing of each record
        return [whole]
    empty = _message([], db_type, correlation_id)
    overhead = len(empty.to_bytes())
    parts: list[list[dict[str, Any]]] = [[]]
    used = overhead
    for record in records:
        size = len(to_json(record))
        if overhead + size > limit:
            raise _too_large(record, overhead + size, limit)
        extra = size + (1 if parts[-1] else 0)  # the comma between two records
        if parts[-1] and used + extra > limit:
            parts.append([])
            used, extra = overhead, size
        parts[-1].append(record)
        used += extra
    messages = [_message(part, db_type, correlation_id) for part in parts]
    for message in messages:  # the sizes above are exact; this guards against a serializer change
        if len(message.to_bytes()) > limit:
            raise AssertionError(f"split_batch made a {len(message.to_bytes())}-byte part over {limit}")
    return messages


def _message(
    records: list[dict[str, Any]], db_type: str, correlation_id: str | None
) -> GuardrailEventsReceived:
    ids = [str(r.get("event_id")) for r in records]
    return GuardrailEventsReceived(
        event_id=records_id(ids) if ids else uuid.UUID(int=0),
        correlation_id=correlation_id,
        db_type=db_type,
        events=records,
    )


def _too_large(record: dict[str, Any], size: int, limit: int) -> EventTooLargeError:
    return EventTooLargeError(
        event_id=str(record.get("event_id")),
        size=size,
        limit=limit,
        payload_bytes=len(json.dumps(record.get("payload") or {}, separators=(",", ":"))),
        labels_bytes=len(json.dumps(record.get("labels") or {}, separators=(",", ":"))),
    )
