"""Layer D: independent content re-validation of an upstream agent's output.

A content validator is any async callable ``(text) -> Verdict``. The payload is validated as the receiver's
*input*, whatever the sender claims: no envelope field, header or payload field can mark content as "already
validated" (the envelope has no such field, and payload fields are not read).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Literal, Protocol

from stockade.guardrails.verdict import Action, Verdict

ContentValidator = Callable[[str], Awaitable[Verdict]]


class SupportsGuardrailChecks(Protocol):
    """The part of GuardrailSystem (stockade.guardrails.system) layer D uses."""

    async def check_input(self, text: str) -> Verdict: ...

    async def check_output(self, text: str) -> Verdict: ...


Stage = Literal["input", "output"]


def content_validator_from_guardrail_system(
    system: SupportsGuardrailChecks, *, stages: Sequence[Stage] = ("input",)
) -> ContentValidator:
    """A layer-D validator running ``system``'s checks on the payload.

    ``stages`` picks which rails run: ``"input"`` (the payload is about to become this agent's input; default),
    ``"output"`` (also run output-only checks such as exfiltration detection), or both, in order. The first
    verdict that does not pass is returned; otherwise the last one.
    """
    if not stages:
        raise ValueError("stages must name at least one of 'input', 'output'")
    for stage in stages:
        if stage not in ("input", "output"):
            raise ValueError(f"unknown stage {stage!r}")

    async def validate(text: str) -> Verdict:
        verdict = Verdict(stage="trust", passed=True, action=Action.ALLOW)
        for stage in stages:
            verdict = await (system.check_input(text) if stage == "input" else system.check_output(text))
            if not verdict.passed:
                return verdict
        return verdict

    return validate
