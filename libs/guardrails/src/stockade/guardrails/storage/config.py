"""Storage of run data in the platform backend (spec 4.3, 6)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class StorageConfig(BaseModel):
    """``guardrails.storage``: buffer run events and flush them to the platform backend on end_run()."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(default=False, description="Buffer run events and send them on end_run().")
    backend_url: str = Field(
        default="http://127.0.0.1:8103", description="Base URL of guardrail-ingest (the platform backend)."
    )
    timeout_s: float = Field(default=10.0, gt=0, description="HTTP timeout of one flush request.")
    max_buffer: int = Field(default=10_000, gt=0, description="Events kept in memory per run before dropping.")
