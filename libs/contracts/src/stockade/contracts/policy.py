"""Which guardrail policy version made a decision: shared by the guardrails library (``GuardrailSystem.policy_ref``)
and the run events it records, and the services that store and show them."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class PolicyRef(BaseModel):
    """A policy published on the platform (prompt-api's ``/policies``), by name and version within its project."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1, max_length=128, description="The policy's name in its project.")
    version: int = Field(ge=1, description="The version (1, 2, ... per policy).")
