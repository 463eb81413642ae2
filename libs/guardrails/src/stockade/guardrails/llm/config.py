"""Model configuration for LLMRails (owned by the LLMRails work)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class ModelConfig(BaseModel):
    """One model LLMRails can call."""

    model_config = ConfigDict(extra="forbid")
