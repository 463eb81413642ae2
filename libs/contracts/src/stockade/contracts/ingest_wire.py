"""The body of ``POST /api/v1/guardrails/{db_type}`` (spec 4.3), shared by the library and guardrail-ingest.

The spec leaves the bodies "not shown"; Stockade's choice::

    {"run": {"run_id": "...", "project_id": "...", ...}, "events": [{"event_id": "...", "kind": "check", ...}]}

Both sides ignore unknown fields, so a newer library can add fields (or event kinds) without breaking an older
backend. ``event_id`` is the idempotency key: a batch sent twice is stored once.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any, Final

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator

DB_TYPES: Final[tuple[str, ...]] = ("mongodb", "dynamodb", "clickhouse")
"""The three ``{db_type}`` literals: a document store, a key-value cloud store, a columnar analytics store."""

MAX_EVENTS_PER_BATCH: Final = 1000
_ID = r"^[A-Za-z0-9][A-Za-z0-9_.:@/-]{0,127}$"
_SHORT = 128
_NO_CONTROL = r"^[^\x00-\x1f\x7f-\x9f]*$"
"""No control characters (C0, DEL, C1) in a client-supplied id or name: printed by `stockade admin dead-letters`
and shown in the console, a terminal escape in one would reach an operator's terminal."""
PLATFORM_KINDS: Final = frozenset({"audit"})
"""Event kinds only the platform writes (guardrail-ingest's audit trail: API-key revocations): a client's batch
with one is refused, so no ingest key can forge the platform's records. Trust rejections the broker files carry
no ``ingest_key_id``; the library's own ``trust`` events carry the key that sent them."""
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


class RunInfo(BaseModel):
    """Run-level correlation sent once per batch and copied onto every stored event."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    run_id: str = Field(pattern=_ID, description="Guardrail run id set by begin_run().")
    project_id: str | None = Field(
        default=None, max_length=_SHORT, pattern=_NO_CONTROL, description="Platform project."
    )
    agent_id: str | None = Field(
        default=None, max_length=_SHORT, pattern=_NO_CONTROL, description="Agent that ran the guardrails."
    )
    environment: str | None = Field(
        default=None, max_length=64, pattern=_NO_CONTROL, description="e.g. prod, staging."
    )
    prompt_name: str | None = Field(
        default=None, max_length=_SHORT, pattern=_NO_CONTROL, description="Prompt the run served."
    )
    prompt_version: str | None = Field(
        default=None, max_length=64, pattern=_NO_CONTROL, description="Version of that prompt."
    )
    correlation_id: str | None = Field(
        default=None,
        max_length=_SHORT,
        pattern=_NO_CONTROL,
        description="Platform run or request id (STOCKADE_RUN_ID).",
    )
    labels: dict[str, str] = Field(default_factory=dict, description="Free-form string labels.")
    started_at: AwareDatetime | None = Field(default=None, description="When begin_run() was called.")
    ended_at: AwareDatetime | None = Field(default=None, description="When end_run() was called.")
    dropped_events: int = Field(default=0, ge=0, description="Events lost to the buffer bound.")

    @field_validator("labels")
    @classmethod
    def _bounded_labels(cls, value: dict[str, str]) -> dict[str, str]:
        if len(value) > 64 or any(len(k) > 64 or len(v) > 256 for k, v in value.items()):
            raise ValueError("at most 64 labels, keys up to 64 and values up to 256 characters")
        if any(_CONTROL.search(k) or _CONTROL.search(v) for k, v in value.items()):
            raise ValueError("labels must not contain control characters")
        return value


class WireEvent(BaseModel):
    """One guardrail event on the wire (the JSON form of :class:`~stockade.guardrails.events.GuardrailEvent`).

    ``kind`` is a plain string here, not the library's enum, so the backend keeps accepting kinds it does not
    know yet.
    """

    model_config = ConfigDict(extra="ignore", frozen=True)

    event_id: str = Field(pattern=_ID, description="Idempotency key.")
    kind: str = Field(
        pattern=r"^[a-z][a-z0-9_]{0,63}$", description="check, generate, tool_authorization, ..."
    )
    name: str = Field(
        min_length=1, max_length=_SHORT, pattern=_NO_CONTROL, description="Check or policy name."
    )
    occurred_at: AwareDatetime = Field(description="UTC timestamp with an offset.")
    session_id: str | None = Field(default=None, max_length=_SHORT, pattern=_NO_CONTROL)
    run_id: str | None = Field(default=None, pattern=_ID, description="The run's id (as run.run_id).")
    action: str | None = Field(default=None, max_length=32, pattern=_NO_CONTROL)
    payload: dict[str, Any] = Field(default_factory=dict, description="Kind-specific, non-sensitive detail.")
    policy_name: str | None = Field(
        default=None,
        max_length=_SHORT,
        pattern=_NO_CONTROL,
        description="The platform guardrail policy whose configuration made the event (None: a local file).",
    )
    policy_version: str | None = Field(
        default=None, max_length=64, pattern=_NO_CONTROL, description="That policy's version."
    )

    @field_validator("occurred_at")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        return value.astimezone(UTC)

    @field_validator("kind")
    @classmethod
    def _not_reserved(cls, value: str) -> str:
        if value in PLATFORM_KINDS:
            raise ValueError(f"kind {value!r} is written by the platform only (its audit trail)")
        return value


class GuardrailBatch(BaseModel):
    """Request body of ``POST /api/v1/guardrails/{db_type}``."""

    model_config = ConfigDict(extra="ignore")

    run: RunInfo
    events: list[WireEvent] = Field(min_length=1, max_length=MAX_EVENTS_PER_BATCH)


class BatchAccepted(BaseModel):
    """202 reply: the batch is durably queued (JetStream acknowledged it); sink workers store it."""

    model_config = ConfigDict(extra="ignore")

    accepted: int = Field(description="Events in the batch (duplicates of stored events included).")
    batch_id: str = Field(description="Deterministic id of the batch (JetStream Nats-Msg-Id).")
    duplicate: bool = Field(default=False, description="True when this exact batch was already queued.")
    db_type: str = Field(description="Store the events go to.")
    parts: int = Field(
        default=1, ge=1, description="JetStream messages the batch was split into (each under max_payload)."
    )


class DbTypeReply(BaseModel):
    """Reply of ``GET /api/v1/db_type``."""

    model_config = ConfigDict(extra="ignore")

    db_type: str = Field(description="One of mongodb, dynamodb, clickhouse.")
