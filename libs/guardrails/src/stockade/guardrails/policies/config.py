"""Configuration of the policy checks (owned by the policies work)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class PoliciesConfig(BaseModel):
    """Token budgets, tool authorization and rate limits."""

    model_config = ConfigDict(extra="forbid")
