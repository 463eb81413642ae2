"""Guardrail run events (spec 6): what the storage hook buffers during a run and flushes on end_run().

Every check, generate result, tool-authorization decision and rate-limit decision becomes one
:class:`GuardrailEvent`. ``event_id`` is the idempotency key every backend sink uses, so a retried flush never
stores an event twice. Events never carry raw sensitive values (only types, offsets, scores, actions).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from stockade.contracts.policy import PolicyRef


class EventKind(StrEnum):
    CHECK = "check"
    GENERATE = "generate"
    TOOL_AUTHORIZATION = "tool_authorization"
    RATE_LIMIT = "rate_limit"
    TOKEN_BUDGET = "token_budget"  # noqa: S105 - an event kind, not a secret
    PII_AUDIT = "pii_audit"
    TRUST = "trust"


class GuardrailEvent(BaseModel):
    """One event of a guardrail run."""

    model_config = ConfigDict(frozen=True)

    event_id: str = Field(default_factory=lambda: str(uuid.uuid4()), description="Idempotency key (UUID).")
    kind: EventKind = Field(description="What happened.")
    name: str = Field(description="Check or policy name, e.g. 'pii', 'tool_authorization'.")
    occurred_at: datetime = Field(default_factory=lambda: datetime.now(UTC), description="UTC timestamp.")
    session_id: str | None = Field(default=None, description="Agent session the event belongs to.")
    run_id: str | None = Field(default=None, description="Run id set by begin_run().")
    action: str | None = Field(default=None, description="allow, warn, mask or block, when a decision.")
    payload: dict[str, Any] = Field(default_factory=dict, description="Kind-specific, non-sensitive detail.")
    policy_name: str | None = Field(
        default=None,
        description="The platform policy whose version made the event (``GuardrailSystem.policy_ref``); the "
        "storage hook fills it in. None: a local configuration.",
    )
    policy_version: str | None = Field(default=None, description="That policy's version.")


@runtime_checkable
class EventRecorder(Protocol):
    """Anything that accepts guardrail events (the storage hook, a test list, a logger)."""

    def record(self, event: GuardrailEvent) -> None: ...


class NullRecorder:
    """Drops events (storage disabled)."""

    def record(self, event: GuardrailEvent) -> None:
        return None


class ListRecorder:
    """Keeps events in a list (tests, debugging)."""

    def __init__(self) -> None:
        self.events: list[GuardrailEvent] = []

    def record(self, event: GuardrailEvent) -> None:
        self.events.append(event)


class PolicyStamp:
    """Records events with a platform policy version, where they name none (:func:`stamping`)."""

    def __init__(self, inner: EventRecorder, name: str, version: str) -> None:
        self.inner, self.name, self.version = inner, name, version

    def record(self, event: GuardrailEvent) -> None:
        if event.policy_name is None:
            event = event.model_copy(update={"policy_name": self.name, "policy_version": self.version})
        self.inner.record(event)


def stamping(recorder: EventRecorder, ref: PolicyRef | None) -> EventRecorder:
    """``recorder``, stamping each event with ``ref`` (the version a check ran on) when there is one."""
    if ref is None or isinstance(recorder, NullRecorder):
        return recorder
    return PolicyStamp(recorder, ref.name, str(ref.version))


class TeeRecorder:
    """Records every event to several recorders (e.g. the caller's recorder and the storage hook)."""

    def __init__(self, *recorders: EventRecorder) -> None:
        self.recorders = recorders

    def record(self, event: GuardrailEvent) -> None:
        for recorder in self.recorders:
            recorder.record(event)
