"""Token budget: counting the full context offline, per-request and per-run limits, block versus warn."""

from __future__ import annotations

import pytest

from stockade.guardrails import Action
from stockade.guardrails.events import EventKind, ListRecorder
from stockade.guardrails.messages import ChatMessage, ChatRequest, ToolDefinition
from stockade.guardrails.policies import (
    ApproximateTokenCounter,
    PoliciesConfig,
    PolicyEngine,
    TiktokenCounter,
    TokenBudget,
    TokenBudgetConfig,
)


def _request(text: str = "What is the capital of France?", *, tools: bool = False) -> ChatRequest:
    tool_defs = [
        ToolDefinition(
            name="lookup_city",
            description="Look up facts about a city by name.",
            parameters={"type": "object", "properties": {"city": {"type": "string"}}},
        )
    ]
    return ChatRequest(
        system="You are a terse geography assistant.",
        messages=[ChatMessage(role="user", content=text)],
        tools=tool_defs if tools else [],
    )


def test_tiktoken_counts_offline_with_the_real_encoding() -> None:
    counter = TiktokenCounter("gpt-4o")
    assert counter.encoding_name == "o200k_base" and counter.exact
    assert counter.count_text("hello world") == 2
    assert TiktokenCounter("gpt-4").encoding_name == "cl100k_base"


def test_unknown_model_falls_back_to_configured_encoding() -> None:
    counter = TiktokenCounter("claude-sonnet-4", fallback_encoding="cl100k_base")
    assert counter.encoding_name == "cl100k_base" and not counter.exact
    assert counter.count_text("hello world") == 2


def test_whole_context_is_counted() -> None:
    counter = TiktokenCounter("gpt-4o")
    bare = ChatRequest(messages=[ChatMessage(role="user", content="What is the capital of France?")])
    with_system = _request()
    with_tools = _request(tools=True)
    assert (
        counter.count_request(bare) < counter.count_request(with_system) < counter.count_request(with_tools)
    )
    assert (
        counter.count_request(with_system) >= counter.count_text("You are a terse geography assistant.") + 7
    )


def test_approximate_counter_is_four_chars_per_token() -> None:
    assert ApproximateTokenCounter().count_text("x" * 41) == 11


def test_oversized_request_is_blocked_before_the_model() -> None:
    budget = TokenBudget(TokenBudgetConfig(per_request=20))
    assert budget.check(_request("short")).passed
    verdict = budget.check(_request("word " * 100))
    assert verdict.blocked and not verdict.passed
    assert verdict.error == "per_request_exceeded"
    assert verdict.findings[0].detail["limit"] == 20 and verdict.findings[0].detail["request_tokens"] > 100


def test_warn_instead_of_block_when_block_on_exceeded_is_off() -> None:
    budget = TokenBudget(TokenBudgetConfig(per_request=20, block_on_exceeded=False))
    verdict = budget.check(_request("word " * 100))
    assert verdict.passed and verdict.action is Action.WARN and verdict.error == "per_request_exceeded"


@pytest.mark.parametrize("block", [True, False])
def test_per_run_budget_accumulates_input_and_output(block: bool) -> None:
    budget = TokenBudget(TokenBudgetConfig(per_run=100, block_on_exceeded=block))
    first = budget.check(_request(), run_id="run-1")
    assert first.action is Action.ALLOW
    used = budget.run_used("run-1")
    assert used > 10
    budget.record_output("run-1", 100 - used - 5)  # five tokens left in the run
    verdict = budget.check(_request(), run_id="run-1")
    assert verdict.action is (Action.BLOCK if block else Action.WARN)
    assert verdict.error == "per_run_exceeded"
    # another run has its own budget
    assert budget.check(_request(), run_id="run-2").action is Action.ALLOW


def test_engine_records_a_token_budget_event() -> None:
    recorder = ListRecorder()
    engine = PolicyEngine(PoliciesConfig(token_budget=TokenBudgetConfig(per_request=5)), recorder=recorder)
    verdict = engine.check_token_budget(_request(), session_id="s1", run_id="r1")
    assert verdict.blocked
    (event,) = recorder.events
    assert event.kind is EventKind.TOKEN_BUDGET and event.action == "block"
    assert event.session_id == "s1" and event.run_id == "r1"
    assert event.payload["request_tokens"] > 5 and event.payload["reason"] == "per_request_exceeded"
    assert "capital of France" not in str(event.payload)


def test_memoised_counts_match_fresh_counts() -> None:
    warm = TiktokenCounter("gpt-4o")
    for _ in range(3):
        warm.count_request(_request(tools=True))
    assert warm.count_request(_request(tools=True)) == TiktokenCounter("gpt-4o").count_request(
        _request(tools=True)
    )
    changed = _request(tools=True)
    bigger = changed.tools[0].model_copy(
        update={"description": changed.tools[0].description + " And much more."}
    )
    changed.tools[0] = bigger
    assert warm.count_request(changed) > warm.count_request(_request(tools=True))


def test_without_the_tokens_extra_limits_fail_fast_and_plain_counting_degrades(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    from stockade.guardrails import MissingExtraError

    monkeypatch.setitem(sys.modules, "tiktoken", None)  # as if the 'tokens' extra were not installed
    with pytest.raises(MissingExtraError, match="'tokens' extra"):
        TokenBudget(TokenBudgetConfig(per_request=100))
    plain = TokenBudget(TokenBudgetConfig())
    assert isinstance(plain.counter, ApproximateTokenCounter) and plain.count(_request()) > 0
