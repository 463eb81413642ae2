"""``guardrails.storage``: buffering of run events and their delivery to the platform backend (spec 4.3, 6)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator


class StorageConfig(BaseModel):
    """``guardrails.storage``: buffer run events and flush them to the platform backend on end_run()."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(default=False, description="Buffer run events and send them on end_run().")
    backend_url: str = Field(
        default="http://127.0.0.1:8103", description="Base URL of guardrail-ingest (the platform backend)."
    )
    timeout_s: float = Field(default=10.0, gt=0, description="HTTP timeout of one flush request.")
    max_buffer: int = Field(
        default=10_000, gt=0, description="Events kept in memory per run before dropping."
    )
    batch_size: int = Field(
        default=500,
        gt=0,
        le=1000,
        description="Events per POST; a run with more events is sent in several batches (the backend caps 1000).",
    )
    max_retries: int = Field(
        default=3, ge=0, description="Retries of one request after a connection error, timeout, 429 or 5xx."
    )
    backoff_initial_s: float = Field(default=0.2, ge=0, description="First retry delay; doubles per retry.")
    backoff_max_s: float = Field(default=5.0, ge=0, description="Upper bound of one retry delay.")
    max_pending_runs: int = Field(
        default=1_000,
        gt=0,
        description="Closed runs whose flush failed kept for a retry; past it the oldest are dropped (counted).",
    )
    max_pending_events: int = Field(
        default=50_000,
        gt=0,
        description="Events of all those runs together; past it the oldest runs (then events) are dropped.",
    )
    retry_pending: bool = Field(
        default=True, description="Retry runs whose flush failed in a background thread, with backoff."
    )
    retry_initial_s: float = Field(
        default=2.0, gt=0, description="First background retry after a failed flush; doubles per failure."
    )
    retry_max_s: float = Field(default=60.0, gt=0, description="Upper bound of the background retry delay.")
    exit_flush_timeout_s: float = Field(
        default=5.0,
        ge=0,
        description="At interpreter exit, try once more to send the kept runs, for at most this long (0: no).",
    )
    api_key: SecretStr | None = Field(
        default=None,
        description=(
            "The project's ingest key, sent as X-API-Key (never logged); unset: the STOCKADE_INGEST_KEY "
            "environment variable. guardrail-ingest refuses batches without a valid key of their project."
        ),
    )

    @model_validator(mode="after")
    def _url_has_scheme(self) -> StorageConfig:
        if not self.backend_url.startswith(("http://", "https://")):
            raise ValueError(f"backend_url must start with http:// or https://, got {self.backend_url!r}")
        return self
