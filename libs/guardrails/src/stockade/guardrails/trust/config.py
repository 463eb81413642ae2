"""Agent-trust configuration (owned by the agent-trust work)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class TrustConfig(BaseModel):
    """Agent registry, keys and the GuardrailPolicy of the trust boundary."""

    model_config = ConfigDict(extra="forbid")
