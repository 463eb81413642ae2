"""From an accepted POST body to the flat records the sinks store, and the batch's deterministic id."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from stockade.contracts.ingest_wire import GuardrailBatch

_BATCH_NAMESPACE = uuid.UUID("5b0f3f8e-55a4-4c8e-9d0c-6f1d8f6b7a01")

RECORD_FIELDS: tuple[str, ...] = (
    "event_id",
    "run_id",
    "kind",
    "name",
    "occurred_at",
    "session_id",
    "action",
    "payload",
    "project_id",
    "agent_id",
    "environment",
    "prompt_name",
    "prompt_version",
    "correlation_id",
    "labels",
    "received_at",
    "ingest_key_id",
    "policy_name",
    "policy_version",
)
"""Every stored event has these fields (None where unknown); ``event_id`` is unique in every store.
``ingest_key_id``: the id of the ingest key that sent the event (None: the platform's own audit records, or an
``open`` deployment). ``policy_name``/``policy_version``: the platform guardrail policy that made the event
(None: a local configuration; events stored before these fields existed have none)."""


def batch_id(batch: GuardrailBatch) -> uuid.UUID:
    """Same events, same id: a retried POST publishes with the same Nats-Msg-Id and JetStream drops it."""
    return records_id(e.event_id for e in batch.events)


def records_id(event_ids: Iterable[str]) -> uuid.UUID:
    """The id of a set of events (order and repeats do not matter): a batch's, or one queued part's."""
    digest = hashlib.sha256("\n".join(sorted(set(event_ids))).encode()).hexdigest()
    return uuid.uuid5(_BATCH_NAMESPACE, digest)


def to_records(
    batch: GuardrailBatch, received_at: datetime | None = None, *, ingest_key_id: str | None = None
) -> list[dict[str, Any]]:
    """One JSON-ready record per distinct event (first occurrence wins), run fields copied onto each, and the
    id of the ingest key that sent them."""
    received = (received_at or datetime.now(UTC)).isoformat()
    run = batch.run
    seen: set[str] = set()
    records: list[dict[str, Any]] = []
    for event in batch.events:
        if event.event_id in seen:
            continue
        seen.add(event.event_id)
        records.append(
            {
                "event_id": event.event_id,
                "run_id": event.run_id or run.run_id,
                "kind": event.kind,
                "name": event.name,
                "occurred_at": event.occurred_at.isoformat(),
                "session_id": event.session_id,
                "action": event.action,
                "payload": event.payload,
                "project_id": run.project_id,
                "agent_id": run.agent_id,
                "environment": run.environment,
                "prompt_name": run.prompt_name,
                "prompt_version": run.prompt_version,
                "correlation_id": run.correlation_id,
                "labels": dict(run.labels),
                "received_at": received,
                "ingest_key_id": ingest_key_id,
                "policy_name": event.policy_name,
                "policy_version": event.policy_version,
            }
        )
    return records
