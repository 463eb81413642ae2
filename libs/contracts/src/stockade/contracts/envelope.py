"""The event envelope every bus event carries, and the v1 event schemas.

Producers set ``event_id`` (UUID) and publish with ``Nats-Msg-Id = event_id`` so a retried publish is stored
once. Consumers ignore unknown fields (``extra="ignore"``), so producers may add fields within a version.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any, ClassVar

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator

from stockade.contracts import subjects
from stockade.contracts.headers import MSG_ID, SCHEMA_VERSION


def _now() -> datetime:
    return datetime.now(UTC)


class EventEnvelope(BaseModel):
    """Fields every event has."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    subject: ClassVar[str] = ""

    event_id: uuid.UUID = Field(default_factory=uuid.uuid4, description="Unique id; the dedupe key.")
    occurred_at: AwareDatetime = Field(default_factory=_now, description="When it happened (UTC).")
    correlation_id: str | None = Field(default=None, description="Request or run this event belongs to.")
    schema_version: int = Field(default=1, ge=1, description="Version of this event's schema.")

    @field_validator("occurred_at")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        return value.astimezone(UTC)

    def address(self) -> str:
        """The subject this event is published on: its :attr:`subject`, unless the event names a narrower one."""
        return self.subject

    def headers(self) -> dict[str, str]:
        """NATS headers for publishing: JetStream dedupes on ``Nats-Msg-Id``."""
        return {MSG_ID: str(self.event_id), SCHEMA_VERSION: str(self.schema_version)}

    def to_bytes(self) -> bytes:
        return self.model_dump_json().encode()


class PromptPublished(EventEnvelope):
    """Published on ``prompt.published.v1.<project_id>`` (:meth:`address`): agents read their projects' only."""

    subject: ClassVar[str] = subjects.PROMPT_PUBLISHED

    project_id: str
    prompt_name: str
    version: int
    sha256: str
    published_by: str

    def address(self) -> str:
        return subjects.prompt_published(self.project_id)


class SkillPublished(EventEnvelope):
    subject: ClassVar[str] = subjects.SKILL_PUBLISHED

    project_id: str
    skill_name: str
    version: int
    sha256: str
    published_by: str


class PolicyPublished(EventEnvelope):
    """A guardrail policy version became active (publish, rollback or approved proposal), published on
    ``policy.published.v1.<project_id>`` (:meth:`address`): agents read their projects' only."""

    subject: ClassVar[str] = subjects.POLICY_PUBLISHED

    project_id: str
    policy_name: str
    version: int
    sha256: str
    published_by: str

    def address(self) -> str:
        return subjects.policy_published(self.project_id)


class ModelChanged(EventEnvelope):
    subject: ClassVar[str] = subjects.MODEL_CHANGED

    db_config_id: str
    provider: str
    model_id: str
    change: str = Field(description="created, updated or deleted")
    effective_at: AwareDatetime | None = Field(
        default=None, description="When the change's prices take effect (added within v1; None: at once)."
    )


class ApiKeyRevoked(EventEnvelope):
    subject: ClassVar[str] = subjects.APIKEY_REVOKED

    key_id: str
    owner_id: str
    project_id: str | None = Field(
        default=None,
        description="The project an ingest key was bound to (added within v1; None for a user's API key, "
        "which belongs to no project).",
    )


class DbConfigActivated(EventEnvelope):
    """A database configuration became the active one (model-api). guardrail-ingest switches its store to
    ``db_type``; ``activated_at`` orders activations (a later one wins). The fields after ``db_config_id`` were
    added within v1 and are absent from events of older producers."""

    subject: ClassVar[str] = subjects.DBCONFIG_ACTIVATED

    db_config_id: str
    db_type: str | None = Field(default=None, description="mongodb, dynamodb or clickhouse.")
    name: str | None = None
    activated_at: AwareDatetime | None = None


class ActiveDbConfig(BaseModel):
    """Reply of ``dbconfig.cmd.active.v1`` (model-api): the active database configuration.

    The request body is ignored (send ``{}``). An error reply is ``{"error": {"code", "message"}}`` instead.
    """

    model_config = ConfigDict(extra="ignore", frozen=True)

    schema_version: int = Field(default=1, ge=1)
    db_config_id: str
    db_type: str = Field(description="mongodb, dynamodb or clickhouse.")
    name: str
    activated_at: AwareDatetime | None = None


class IngestKeyQuery(BaseModel):
    """Request of ``apikey.cmd.verify_ingest.v1`` (guardrail-ingest to model-api): the key id and the SHA-256
    (hex) of the whole presented key. The plaintext never goes on the bus."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    schema_version: int = Field(default=1, ge=1)
    key_id: str = Field(max_length=64)
    key_hash: str = Field(pattern=r"^[0-9a-f]{64}$")


class IngestKeyVerdict(BaseModel):
    """Reply of ``apikey.cmd.verify_ingest.v1``: whether the key may send run events, and for which project.

    An error reply (the database is down) is ``{"error": {"code", "message"}}`` instead: the asker fails closed.
    """

    model_config = ConfigDict(extra="ignore", frozen=True)

    schema_version: int = Field(default=1, ge=1)
    valid: bool
    reason: str
    key_id: str
    project_id: str | None = None


class GuardrailEventsReceived(EventEnvelope):
    subject: ClassVar[str] = subjects.GUARDRAIL_EVENTS

    db_type: str
    events: list[dict[str, Any]]


class GuardrailEventDeadLettered(EventEnvelope):
    """One guardrail event the store refused on every one of ``attempts`` deliveries (guardrail-ingest).

    ``record`` is the event as it was to be stored; ``batch_id`` and ``stream_sequence`` name the queued message
    it came in. ``stockade admin dead-letters replay`` queues it again.
    """

    subject: ClassVar[str] = subjects.GUARDRAIL_DEAD_LETTERED

    db_type: str
    reason: str
    attempts: int
    batch_id: str | None = None
    stream_sequence: int | None = None
    record: dict[str, Any]


class TrustRejected(EventEnvelope):
    subject: ClassVar[str] = subjects.TRUST_REJECTED

    sender: str | None
    receiver: str
    reason: str
    layer: str | None = None
    project_id: str | None = Field(
        default=None,
        description="The project of the agent the message was for, else of its claimed sender, as the trust "
        "registry names it (added within v1; None when neither agent names one).",
    )
