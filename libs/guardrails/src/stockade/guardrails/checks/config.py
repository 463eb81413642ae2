"""Configuration of the content checks (owned by the content-checks work)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class ContentChecksConfig(BaseModel):
    """Content checks of GuardrailSystem: PII/PHI, sensitive data, toxicity, exfiltration, classification."""

    model_config = ConfigDict(extra="forbid")
