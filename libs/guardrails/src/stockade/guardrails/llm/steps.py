"""The generation steps LLMRails.agenerate() and its stream (RailsStream) share.

Input rails, prices and context window, token accounting, output rails and the closing GENERATE event, as
functions of :class:`RailsParts`: the parts of an LLMRails they use (its content rails, model provider, policy
engine, model settings). ``rails`` drives them around a whole reply, ``stream`` around a streamed one.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from decimal import Decimal
from typing import Protocol

from stockade.guardrails.events import EventKind, EventRecorder, GuardrailEvent
from stockade.guardrails.llm.call import Call
from stockade.guardrails.llm.catalogue import CatalogueClient
from stockade.guardrails.llm.checked_memory import CheckedMessages
from stockade.guardrails.llm.config import ModelConfig
from stockade.guardrails.llm.message_checks import ContentRails, check_messages
from stockade.guardrails.llm.providers import ModelProvider
from stockade.guardrails.llm.result import GenerationResult
from stockade.guardrails.messages import ChatRequest, TokenUsage, estimate_cost
from stockade.guardrails.policies.engine import PolicyEngine
from stockade.guardrails.verdict import Action

Prices = tuple[Decimal | None, Decimal | None]
"""Input and output price per million tokens."""


class RailsParts(Protocol):
    """What the steps use of an LLMRails."""

    @property
    def system(self) -> ContentRails: ...
    @property
    def provider(self) -> ModelProvider: ...
    @property
    def policies(self) -> PolicyEngine: ...
    @property
    def owns_policies(self) -> bool: ...
    @property
    def count_requests(self) -> bool: ...
    @property
    def checked_messages(self) -> CheckedMessages: ...
    @property
    def catalogue(self) -> CatalogueClient | None: ...
    @property
    def model_config(self) -> ModelConfig | None: ...
    @property
    def recorder(self) -> EventRecorder: ...


def ms_since(start: float) -> float:
    return (time.perf_counter() - start) * 1e3


def new_result(parts: RailsParts) -> GenerationResult:
    return GenerationResult(
        text=None,
        passed=True,
        action=Action.ALLOW,
        provider=parts.provider.provider,
        model=parts.provider.model,
    )


def block(result: GenerationResult, stage: str, reason: str) -> None:
    result.passed, result.action, result.text, result.error = False, Action.BLOCK, None, reason
    result.blocked_at = "input" if stage == "input" else "output"


async def input_rails(parts: RailsParts, call: Call, result: GenerationResult) -> ChatRequest | None:
    """Content checks of the new messages, then the token budget. Returns the request to send, or None."""
    session_id, run_id = call.session_id, call.run_id
    start = time.perf_counter()
    screening = await check_messages(
        parts.system,
        call.request,
        parts.checked_messages,
        session_id=session_id,
        run_id=run_id,
        metadata=call.metadata,
    )
    request = screening.request
    result.verdicts.update(screening.verdicts())
    result.message_checks = screening.checks
    result.messages_already_checked = screening.already_checked
    result.timings_ms["input_rails"] = ms_since(start)
    if (blocked := screening.blocked) is not None:
        result.blocked_message = blocked
        reason = blocked.verdict.error or f"{blocked.stage} rails blocked the request"
        block(result, "input", f"{blocked.describe()}: {reason}")
        return None
    if parts.owns_policies:
        parts.policies.recorder = parts.recorder
    if parts.count_requests and session_id is not None:
        start = time.perf_counter()
        quota = await parts.policies.before_request(session_id, run_id=run_id)
        result.timings_ms["rate_limit"] = ms_since(start)
        result.verdicts["rate_limit"] = quota
        if quota.action is Action.BLOCK:
            block(result, "input", quota.error or "request quota exceeded")
            return None
    start = time.perf_counter()
    budget, tokens = parts.policies.assess_token_budget(request, session_id=session_id, run_id=run_id)
    result.timings_ms["token_budget"] = ms_since(start)
    result.verdicts["token_budget"] = budget
    result.estimated_input_tokens = tokens
    if budget.action is Action.BLOCK:
        block(result, "input", budget.error or "token budget exceeded")
        return None
    window = await context_window(parts)
    if window is not None and tokens > window:
        block(result, "input", f"the request ({tokens} tokens) exceeds the model's context window ({window})")
        return None
    return request


async def context_window(parts: RailsParts) -> int | None:
    """The model's context window: the catalogue's when it knows one, else the YAML configuration's."""
    mc = parts.model_config
    if mc is None:
        return None
    if parts.catalogue is not None:
        entry = await parts.catalogue.get(mc.provider, mc.model)
        if entry is not None and entry.context_window is not None:
            return entry.context_window
    return mc.context_window


async def prices_in_force(parts: RailsParts) -> Prices:
    """Input and output price per million tokens when the call is made: the catalogue's, else YAML's."""
    mc = parts.model_config
    if mc is None:
        return None, None
    if parts.catalogue is not None:
        entry = await parts.catalogue.get(mc.provider, mc.model)
        if entry is not None:
            prices = entry.prices_at(datetime.now(UTC))  # the price in force when the call is made
            if None not in prices:
                return prices
    return mc.input_price_per_mtok, mc.output_price_per_mtok


def account(
    parts: RailsParts, result: GenerationResult, usage: TokenUsage, run_id: str | None, prices: Prices
) -> None:
    if usage.input_tokens == 0:
        usage = usage.model_copy(update={"input_tokens": result.estimated_input_tokens})
    result.usage = usage
    # The run was charged the counted input before the call; settle it to what the provider reported.
    correction = max(0, usage.input_tokens - result.estimated_input_tokens)
    parts.policies.record_output_tokens(run_id, usage.output_tokens + correction)
    result.cost = estimate_cost(usage, *prices)


async def output_rails(parts: RailsParts, call: Call, text: str, result: GenerationResult) -> None:
    start = time.perf_counter()
    verdict = await parts.system.check_output(text, session_id=call.session_id, metadata=call.metadata)
    result.timings_ms["output_rails"] = ms_since(start)
    result.verdicts["output"] = verdict
    if verdict.action is Action.BLOCK:
        block(result, "output", verdict.error or "output rails blocked the reply")
    elif verdict.action is Action.MASK and verdict.masked_text is not None:
        result.text, result.error = verdict.masked_text, verdict.error  # spec 3: mask and say so
    else:
        result.text = text


def finish(parts: RailsParts, call: Call, result: GenerationResult, total: float) -> None:
    """Close the result (total time, strongest action) and record its GENERATE event."""
    result.timings_ms["total"] = ms_since(total)
    if result.passed:
        result.action = Action.strongest([v.action for v in result.verdicts.values()])
    parts.recorder.record(
        GuardrailEvent(
            kind=EventKind.GENERATE,
            name="generate",
            session_id=call.session_id,
            run_id=call.run_id,
            action=result.action.value,
            payload=result.event_payload(),
        )
    )
