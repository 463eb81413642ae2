"""The aggregated result of one LLMRails.generate() call."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Literal

from pydantic import BaseModel, Field

from stockade.guardrails.llm.message_checks import MessageCheck
from stockade.guardrails.messages import TokenUsage, ToolCall
from stockade.guardrails.verdict import Action, Verdict


class GenerationResult(BaseModel):
    """Input rails, model, output rails: what came out, and every verdict, timing and token behind it."""

    text: str | None = Field(
        description="The reply as released (masked when output rails masked); None if blocked."
    )
    passed: bool = Field(description="False when a rail blocked.")
    action: Action = Field(description="Strongest action over all rails.")
    blocked_at: Literal["input", "output"] | None = Field(default=None, description="Which rail blocked.")
    error: str | None = Field(
        default=None,
        description="Why it was blocked, or why the output rails masked the reply (types and counts only).",
    )
    model_called: bool = Field(default=False, description="Whether the model was called at all.")
    verdicts: dict[str, Verdict] = Field(
        default_factory=dict,
        description="Per-rail verdicts: 'input', 'context' (of the messages checked: the blocking one, else "
        "the strongest), 'token_budget', 'output'.",
    )
    message_checks: list[MessageCheck] = Field(
        default_factory=list, description="The messages of the request checked in this call, in order."
    )
    blocked_message: MessageCheck | None = Field(
        default=None, description="The message whose check blocked the call (index, role, source, verdict)."
    )
    messages_already_checked: int = Field(
        default=0, description="Messages not checked again: they passed in an earlier call of the session."
    )
    timings_ms: dict[str, float] = Field(
        default_factory=dict, description="input_rails, model, output_rails, total."
    )
    tool_calls: list[ToolCall] = Field(
        default_factory=list,
        description="Tool calls the model asked for (empty when blocked); authorize each.",
    )
    usage: TokenUsage = Field(default_factory=TokenUsage, description="Tokens of the model call.")
    estimated_input_tokens: int = Field(default=0, description="Input tokens as counted before the call.")
    cost: Decimal | None = Field(
        default=None, description="Estimated cost from the model's prices, when known."
    )
    provider: str = ""
    model: str = ""

    def event_payload(self) -> dict[str, Any]:
        """A non-sensitive summary for the GENERATE event (no prompt or reply text)."""
        return {
            "provider": self.provider,
            "model": self.model,
            "passed": self.passed,
            "error": self.error,
            "blocked_at": self.blocked_at,
            "model_called": self.model_called,
            "blocked_message": _message_ref(self.blocked_message),
            "messages_checked": len(self.message_checks),
            "messages_already_checked": self.messages_already_checked,
            "actions": {name: v.action.value for name, v in self.verdicts.items()},
            "tool_calls": [c.name for c in self.tool_calls],
            "input_tokens": self.usage.input_tokens,
            "output_tokens": self.usage.output_tokens,
            "estimated_input_tokens": self.estimated_input_tokens,
            "cost": str(self.cost) if self.cost is not None else None,
            "timings_ms": dict(self.timings_ms),
        }


def _message_ref(check: MessageCheck | None) -> dict[str, Any] | None:
    if check is None:
        return None
    return {"index": check.index, "role": check.role, "source": check.source, "stage": check.stage}
