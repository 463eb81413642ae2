"""What every check's settings share: the stage a check runs on, strict models, the common fields."""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator


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


class CustomCheckConfig(CheckSettings):
    """``guardrails.checks.custom.<name>``: a check from another package, built by its factory.

    ``factory`` is ``"package.module:callable"``; the callable takes the whole ``ContentChecksConfig`` (the
    check reads its own section as ``config.custom[name]``, ``options`` included) and returns an object that
    implements :class:`stockade.guardrails.checks.base.ContentCheck`. Without ``factory`` the name must have
    been registered in the process with ``register_check`` before the system is built.
    """

    factory: str | None = Field(
        default=None, description="'package.module:callable' that builds the check (else register_check)."
    )
    options: dict[str, Any] = Field(default_factory=dict, description="Free-form settings for the check.")

    @field_validator("factory")
    @classmethod
    def _factory(cls, v: str | None) -> str | None:
        if v is not None and not re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*", v):
            raise ValueError("must be 'package.module:callable'")
        return v
