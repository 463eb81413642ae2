"""Approval metadata for sensitive tool calls: who approved, when, and for exactly which arguments."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator


def args_hash(arguments: dict[str, Any]) -> str:
    """SHA-256 of the arguments as canonical JSON (sorted keys, no spaces): equal arguments, equal hash."""
    canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class Approval(BaseModel):
    """A human's approval of one sensitive tool call. Anything but an exact match is a denial."""

    model_config = ConfigDict(frozen=True)

    tool: str = Field(description="Tool the approval is for.")
    approver: str = Field(min_length=1, description="Who approved.")
    approved_at: datetime = Field(description="When (timezone-aware; naive values are rejected).")
    args_hash: str = Field(pattern=r"^[0-9a-f]{64}$", description="args_hash() of the approved arguments.")

    @field_validator("approved_at")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        if value.tzinfo is None:
            raise ValueError("approved_at must be timezone-aware")
        return value.astimezone(UTC)

    @classmethod
    def for_call(
        cls, tool: str, arguments: dict[str, Any], *, approver: str, approved_at: datetime | None = None
    ) -> Approval:
        """Approve ``tool`` with exactly these ``arguments``."""
        return cls(
            tool=tool,
            approver=approver,
            approved_at=approved_at or datetime.now(UTC),
            args_hash=args_hash(arguments),
        )
