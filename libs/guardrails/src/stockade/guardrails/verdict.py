"""Guardrail decisions are values: a ``Verdict`` with findings, an action and a risk score."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Action(StrEnum):
    """What a check (or the whole rail) decided. Ordered by severity: allow < warn < mask < block."""

    ALLOW = "allow"
    WARN = "warn"
    MASK = "mask"
    BLOCK = "block"

    @property
    def severity(self) -> int:
        return _SEVERITY[self]

    @classmethod
    def strongest(cls, actions: list[Action]) -> Action:
        return max(actions, key=lambda a: a.severity, default=cls.ALLOW)


_SEVERITY = {Action.ALLOW: 0, Action.WARN: 1, Action.MASK: 2, Action.BLOCK: 3}


class Finding(BaseModel):
    """One thing a check found. ``start``/``end`` are character offsets into the checked text, when known.

    A finding never carries the raw sensitive value: only its type, place and score.
    """

    model_config = ConfigDict(frozen=True)

    check: str = Field(description="Name of the check that produced the finding.")
    type: str = Field(description="What was found, e.g. EMAIL_ADDRESS, jailbreak, aws_access_key, toxic.")
    start: int | None = Field(default=None, description="Start offset (inclusive) in the checked text.")
    end: int | None = Field(default=None, description="End offset (exclusive) in the checked text.")
    score: float = Field(default=1.0, ge=0.0, le=1.0, description="Confidence or risk in [0, 1].")
    action: Action = Field(default=Action.WARN, description="What the check's policy says to do about it.")
    detail: dict[str, Any] = Field(default_factory=dict, description="Check-specific, non-sensitive detail.")


class CheckResult(BaseModel):
    """The outcome of one check on one text."""

    check: str
    action: Action = Action.ALLOW
    findings: list[Finding] = Field(default_factory=list)
    score: float = Field(default=0.0, ge=0.0, le=1.0, description="Risk score of this check in [0, 1].")
    masked_text: str | None = Field(default=None, description="The text with this check's masking applied.")
    duration_ms: float = 0.0
    error: str | None = Field(default=None, description="Set when the check failed to run (timeout, crash).")


class Verdict(BaseModel):
    """The aggregated decision of a rail (input or output) over several checks."""

    stage: str = Field(description="'input' or 'output' (or a policy name).")
    passed: bool
    action: Action
    findings: list[Finding] = Field(default_factory=list)
    results: list[CheckResult] = Field(default_factory=list)
    masked_text: str | None = None
    risk_score: float = Field(default=0.0, ge=0.0, le=1.0)
    timings_ms: dict[str, float] = Field(default_factory=dict)
    error: str | None = Field(
        default=None,
        description="Why the rail blocked or masked, e.g. 'output masked: pii found EMAIL_ADDRESS (2), "
        "PERSON (1)' (finding types and counts, never values); None when it allowed.",
    )

    @property
    def blocked(self) -> bool:
        return self.action is Action.BLOCK

    @classmethod
    def allow(cls, stage: str) -> Verdict:
        return cls(stage=stage, passed=True, action=Action.ALLOW)
