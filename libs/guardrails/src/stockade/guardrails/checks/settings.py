"""What every check's settings share: the stage a check runs on, strict models, the common fields."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class Stage(StrEnum):
    """Where a check runs: the user's input, the model's output, or context (text that enters the model's
    context from outside the user: tool results, retrieved documents, e-mails, web pages, another agent's output).
    """

    INPUT = "input"
    OUTPUT = "output"
    CONTEXT = "context"


class Strict(BaseModel):
    """A settings model that rejects unknown keys (a typo is an error that names the key)."""

    model_config = ConfigDict(extra="forbid")


class CheckSettings(Strict):
    """Settings every check shares."""

    enabled: bool = Field(default=True, description="Run this check.")
    stages: list[Stage] = Field(
        default_factory=lambda: [Stage.INPUT, Stage.OUTPUT],
        description="Rails it runs on: input, output, context.",
    )
    timeout_s: float = Field(default=5.0, gt=0, description="Per-run timeout; a timeout counts as a failure.")
    fail_closed: bool | None = Field(
        default=None,
        description="Block when the check fails (timeout, crash, service down). None: the stage default "
        "(checks.fail_closed_input / fail_closed_output / fail_closed_context).",
    )
