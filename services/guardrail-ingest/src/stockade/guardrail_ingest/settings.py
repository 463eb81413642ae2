"""Settings of guardrail-ingest (environment prefix ``GUARDRAIL_INGEST_``, nested with ``__``).

The active store is model-api's active database configuration (README, "Which store");
``GUARDRAIL_INGEST_SINK__<KIND>_URL`` (or a file in ``SINK__SECRETS_DIR``) says how to reach each store, and
``GUARDRAIL_INGEST_SINK__KIND`` (with ``SINK__URL``) is the store used until the active one is known.
``GUARDRAIL_INGEST_SINK__TABLE`` names the collection / table (default ``guardrail_events``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field
from pydantic_settings import SettingsConfigDict

from stockade.contracts import subjects
from stockade.contracts.ingest_wire import MAX_EVENTS_PER_BATCH
from stockade.contracts.limits import STREAM_LIMITS
from stockade.contracts.streams import (
    GUARDRAIL_AUDIT_CONSUMER,
    GUARDRAIL_DUPLICATE_WINDOW_S,
    GUARDRAIL_SINK_CONSUMER,
)
from stockade.guardrail_ingest.quotas import QuotaSettings
from stockade.guardrail_ingest.reads import ReadSettings
from stockade.runtime.settings import HttpSettings, ServiceSettings

_EVENTS = STREAM_LIMITS[subjects.stream_for(subjects.GUARDRAIL_EVENTS)]
_DEAD = STREAM_LIMITS[subjects.stream_for(subjects.GUARDRAIL_DEAD_LETTERED)]
SinkKind = Literal["mongodb", "dynamodb", "clickhouse"]
_DEFAULT_URLS: dict[str, str] = {  # DynamoDB has none: unset means the AWS endpoint of the region
    "mongodb": "mongodb://127.0.0.1:27017/stockade",
    "clickhouse": "chdb:///./.stockade/clickhouse",
}


class SinkSettings(BaseModel):
    """The event stores. The active one is also the ``{db_type}`` the library posts to."""

    kind: SinkKind = Field(
        default="mongodb",
        description="Store used until the active configuration is known (or always, with ACTIVE__FOLLOW=false).",
    )
    url: str | None = Field(
        default=None,
        description=(
            "mongodb://... (database from the path, default 'stockade'); http://host:8000 for DynamoDB (empty: "
            "AWS default endpoint); chdb:///path or http://user:pass@host:8123/db for ClickHouse."
        ),
    )
    table: str = Field(
        default="guardrail_events",
        pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,99}(\.[A-Za-z_][A-Za-z0-9_]{0,99})?$",
        description="Mongo collection, DynamoDB table or ClickHouse table.",
    )
    region: str | None = Field(default=None, description="DynamoDB region (default: AWS_DEFAULT_REGION).")
    dynamodb_write: Literal["batch", "conditional"] = Field(
        default="batch",
        description=(
            "DynamoDB: 'batch' (BatchGetItem filter + BatchWriteItem, fast) or 'conditional' (PutItem with "
            "attribute_not_exists(event_id) per event: first write wins)."
        ),
    )
    create_schema: bool = Field(
        default=True, description="Create the table/collection and its unique index at startup if missing."
    )
    timeout_s: float = Field(default=10.0, gt=0, description="Timeout of one store operation.")

    mongodb_url: str | None = Field(
        default=None, description="How to reach MongoDB when it is the active store."
    )
    dynamodb_url: str | None = Field(
        default=None, description="DynamoDB endpoint when it is the active store (empty: AWS endpoint)."
    )
    clickhouse_url: str | None = Field(
        default=None, description="How to reach ClickHouse when it is the active store."
    )
    secrets_dir: Path | None = Field(
        default=None,
        description=(
            "Directory of secret files named mongodb_url, dynamodb_url, clickhouse_url (a mounted Kubernetes "
            "secret); a file is used when the matching *_URL variable is unset."
        ),
    )

    def resolved_url(self, kind: str | None = None) -> str | None:
        """The URL of store ``kind`` (default: ``self.kind``): its own ``<kind>_url``, else the file
        ``<kind>_url`` in ``secrets_dir``, else ``url`` when ``kind`` is the default store, else the built-in
        default; None for DynamoDB without one (boto3 picks the AWS endpoint of the region)."""
        kind = kind or self.kind
        own: str | None = getattr(self, f"{kind}_url", None)
        if own:
            return own
        if self.secrets_dir is not None:
            path = self.secrets_dir / f"{kind}_url"
            if path.is_file():
                text = path.read_text(encoding="utf-8").strip()
                if text:
                    return text
        if kind == self.kind and self.url:
            return self.url
        return _DEFAULT_URLS.get(kind)


class ActiveStoreSettings(BaseModel):
    """How a replica learns the active database configuration from model-api (README, "Which store")."""

    follow: bool = Field(
        default=True,
        description="Follow model-api's active configuration; false pins the store to SINK__KIND.",
    )
    request_timeout_s: float = Field(
        default=2.0, gt=0, description="Wait this long for model-api's answer to dbconfig.cmd.active.v1."
    )
    resync_s: float = Field(
        default=10.0, gt=0, description="Ask model-api again this often (repairs a missed event)."
    )


class AuditSettings(BaseModel):
    """The audit trail: trust-broker rejections and API-key revocations stored beside run events (README)."""

    enabled: bool = Field(default=True, description="Consume trust.rejected.v1 and apikey.revoked.v1.")
    project_id: str | None = Field(
        default=None, description="Project an audit record is filed under when its event names none."
    )
    durable: str = Field(
        default=GUARDRAIL_AUDIT_CONSUMER, description="Durable consumer on TRUST and IDENTITY (prefix)."
    )


class IngestSettings(BaseModel):
    """The HTTP side: limits of one POST and the JetStream publish."""

    max_events: int = Field(
        default=MAX_EVENTS_PER_BATCH, gt=0, le=MAX_EVENTS_PER_BATCH, description="Events per POST (else 413)."
    )
    max_body_bytes: int = Field(default=4 * 1024 * 1024, gt=0, description="POST body size cap (else 413).")
    publish_timeout_s: float = Field(default=5.0, gt=0, description="Wait for the JetStream ack (else 503).")
    auth: Literal["keys", "open"] = Field(
        default="keys",
        description=(
            "keys: every POST needs a valid per-project ingest key in X-API-Key (verified by model-api) or "
            "api_key. open: no authentication at all, for tests and benchmarks on a closed host only."
        ),
    )
    api_key: str | None = Field(
        default=None,
        description=(
            "A deployment-wide key for tests and single-host development, accepted for every project "
            "(constant-time compare). Production uses per-project ingest keys instead."
        ),
    )
    key_cache_s: float = Field(
        default=15.0,
        ge=0,
        description=(
            "How long a valid ingest key is trusted without asking model-api again; a revocation "
            "(apikey.revoked.v1) drops it at once, removal of its owner from the project after this."
        ),
    )
    key_verify_timeout_s: float = Field(
        default=2.0, gt=0, description="Wait for model-api's answer about a key (else 503, nothing accepted)."
    )
    key_refused_cache_s: float = Field(
        default=10.0,
        ge=0,
        description=(
            "How long model-api's refusal of a key (unknown, revoked, not an ingest key, owner not a member) is "
            "remembered, so the same bad key is not asked about again (0: not cached). Dropped with the "
            "positive cache (apikey.revoked.v1 of the key, a NATS reconnection)."
        ),
    )
    key_refused_cache_size: int = Field(
        default=10_000, ge=0, description="Refused key hashes remembered at most (the oldest go first)."
    )
    key_failures_per_client: int = Field(
        default=30,
        ge=0,
        description=(
            "Failed authentications one client address (an IPv6 client: its /64) may have in a row before "
            "it is answered 429 with Retry-After; the budget refills over key_failure_window_s. A valid key "
            "in the positive cache always passes. 0: no limit."
        ),
    )
    key_failure_window_s: float = Field(
        default=60.0, gt=0, description="Time in which a used-up failure budget refills completely."
    )
    key_failure_clients: int = Field(
        default=10_000,
        ge=1,
        description="Client addresses whose failures are tracked at once (memory bound).",
    )
    quotas: QuotaSettings = Field(
        default_factory=QuotaSettings, description="Per-key and per-project quotas (429 with Retry-After)."
    )


class StreamSettings(BaseModel):
    """The JetStream stream and the durable consumer shared by every replica's sink workers."""

    stream: str = Field(default=subjects.stream_for(subjects.GUARDRAIL_EVENTS), description="Stream name.")
    subject: str = Field(default=subjects.GUARDRAIL_EVENTS, description="Subject of accepted batches.")
    duplicate_window_s: float = Field(
        default=GUARDRAIL_DUPLICATE_WINDOW_S,
        gt=0,
        description="How long JetStream remembers a batch id (Nats-Msg-Id) for dedupe.",
    )
    max_age_s: float = Field(
        default=_EVENTS.max_age_s,
        gt=0,
        description="Batches not stored within this expire (when creating it).",
    )
    max_bytes: int = Field(
        default=_EVENTS.max_bytes,
        gt=0,
        description="Size bound of the events stream; when full, POSTs get 503 until the stores catch up.",
    )
    durable: str = Field(default=GUARDRAIL_SINK_CONSUMER, description="Durable pull consumer (shared).")
    workers: int = Field(default=2, ge=0, description="Sink worker tasks in this process (0: HTTP only).")
    fetch_batch: int = Field(default=16, gt=0, description="Messages fetched per pull.")
    fetch_timeout_s: float = Field(default=1.0, gt=0, description="Long-poll of one pull.")
    linger_s: float = Field(
        default=0.1,
        ge=0,
        description=(
            "After a pull returned fewer than fetch_batch messages, keep pulling this long before writing: fewer, "
            "larger inserts (a ClickHouse insert of 16 runs is ~4x faster per event than 16 inserts of one)."
        ),
    )
    ack_wait_s: float = Field(
        default=60.0, gt=0, description="Redeliver a batch not acknowledged within this (worker died)."
    )
    retry_delay_s: float = Field(
        default=2.0, gt=0, description="Delay before redelivery after a store error."
    )
    dead_letter_after: int = Field(
        default=5,
        ge=1,
        description=(
            "Deliveries of a batch after which an event the store refused on its own goes to the dead-letter "
            "stream (the rest of its batch is stored on the first)."
        ),
    )
    dead_letter_give_up_after: int = Field(
        default=5,
        ge=0,
        description="Further deliveries while the dead-letter stream refuses (full or missing) before the "
        "refused events are dropped, counted and logged (guardrail_ingest_events_dropped_total): bounded, never "
        "a batch retried forever holding the consumer's ack-pending room.",
    )
    dead_letter_stream: str = Field(
        default=subjects.stream_for(subjects.GUARDRAIL_DEAD_LETTERED), description="Dead-letter stream."
    )
    dead_letter_subject: str = Field(
        default=subjects.GUARDRAIL_DEAD_LETTERED, description="Subject of dead letters."
    )
    dead_letter_max_age_s: float = Field(
        default=_DEAD.max_age_s, gt=0, description="Dead letters expire after this (used when creating it)."
    )
    dead_letter_max_bytes: int = Field(
        default=_DEAD.max_bytes, gt=0, description="Size bound of the dead-letter stream (when creating it)."
    )


class GuardrailIngestSettings(ServiceSettings):
    model_config = SettingsConfigDict(
        env_prefix="GUARDRAIL_INGEST_", env_nested_delimiter="__", extra="ignore"
    )

    service_name: str = "guardrail-ingest"
    http: HttpSettings = Field(default_factory=lambda: HttpSettings(port=8103))
    sink: SinkSettings = Field(
        default_factory=SinkSettings,
        description="The event stores: how to reach each, and the default until the active one is known.",
    )
    active: ActiveStoreSettings = Field(
        default_factory=ActiveStoreSettings, description="Following model-api's active configuration."
    )
    ingest: IngestSettings = Field(default_factory=IngestSettings, description="POST limits.")
    jetstream: StreamSettings = Field(default_factory=StreamSettings, description="Stream and sink workers.")
    audit: AuditSettings = Field(
        default_factory=AuditSettings, description="Trust and API-key audit records."
    )
    reads: ReadSettings = Field(
        default_factory=ReadSettings, description="The console's reads of the run store."
    )
