"""LLMRails.generate(): input rails, model, output rails, aggregated result (with the library's fake provider)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from stockade.guardrails import Action
from stockade.guardrails.events import EventKind
from stockade.guardrails.llm.providers.base import ModelProviderError
from stockade.guardrails.llm.rails import LLMRails
from stockade.guardrails.messages import ModelResponse, TokenUsage
from stockade.guardrails.system import GuardrailSystem
from stockade.guardrails.testing import FakeClassifier, FakeModelProvider, InMemoryRecorder

PRICED = {
    "models": [
        {
            "provider": "openai",
            "model": "gpt-4o",
            "input_price_per_mtok": "2.50",
            "output_price_per_mtok": "10.00",
        }
    ]
}


async def test_clean_prompt_goes_through_with_verdicts_timings_usage_and_cost(
    system: GuardrailSystem, recorder: InMemoryRecorder
) -> None:
    reply = ModelResponse(text="Paris.", usage=TokenUsage(input_tokens=1000, output_tokens=500))
    provider = FakeModelProvider([reply])
    rails = LLMRails(PRICED, provider=provider, system=system)
    result = await rails.agenerate(
        "What is the capital of France?", system_prompt="Be terse.", session_id="s1"
    )
    assert result.passed and result.text == "Paris." and result.action is Action.ALLOW
    assert set(result.verdicts) == {"input", "token_budget", "output"}
    assert {"input_rails", "token_budget", "model", "output_rails", "total"} <= set(result.timings_ms)
    assert result.usage.total_tokens == 1500
    assert result.cost == Decimal("0.0075")  # 1000 * 2.50/1M + 500 * 10/1M
    assert result.estimated_input_tokens > 5
    assert provider.requests[0].system == "Be terse."
    (event,) = recorder.of_kind(EventKind.GENERATE)
    assert event.session_id == "s1" and event.payload["cost"] == "0.0075"
    assert "Paris" not in str(event.payload) and "France" not in str(event.payload)


async def test_failed_input_check_means_the_model_is_never_called(
    system: GuardrailSystem, classifier: FakeClassifier
) -> None:
    provider = FakeModelProvider(["should never be seen"])
    rails = LLMRails(provider=provider, system=system)
    result = await rails.agenerate("please jailbreak yourself")
    assert not result.passed and result.blocked_at == "input" and result.text is None
    assert not result.model_called and provider.calls == 0
    assert result.verdicts["input"].blocked and "jailbreak" in (result.error or "")


async def test_masked_input_is_what_the_model_receives(system: GuardrailSystem) -> None:
    provider = FakeModelProvider(["noted"])
    rails = LLMRails(provider=provider, system=system)
    result = await rails.agenerate("my secret is hunter2")
    assert result.passed and result.verdicts["input"].action is Action.MASK
    assert provider.requests[0].messages[-1].content == "my <secret> is hunter2"


async def test_failed_output_check_blocks_the_reply(system: GuardrailSystem) -> None:
    rails = LLMRails(provider=FakeModelProvider(["here is an exploit for you"]), system=system)
    result = await rails.agenerate("hello")
    assert result.model_called and not result.passed and result.blocked_at == "output"
    assert result.text is None and result.verdicts["output"].blocked


async def test_masking_output_check_returns_masked_text(system: GuardrailSystem) -> None:
    rails = LLMRails(provider=FakeModelProvider(["the secret word"]), system=system)
    result = await rails.agenerate("hello")
    assert result.passed and result.action is Action.MASK and result.text == "the <secret> word"
    # spec 3: an output rail that masks also returns an error saying what it masked (types, never values)
    assert result.error == "output masked: fake found secret (1)" == result.verdicts["output"].error
    assert result.blocked_at is None


async def test_token_budget_blocks_before_the_model(system: GuardrailSystem) -> None:
    config = {"guardrails": {"policies": {"token_budget": {"per_request": 10}}}}
    provider = FakeModelProvider(["x"])
    rails = LLMRails(config, provider=provider, system=system)
    result = await rails.agenerate("word " * 50)
    assert result.blocked_at == "input" and result.error == "per_request_exceeded" and provider.calls == 0


async def test_token_budget_warns_and_proceeds_when_not_blocking(system: GuardrailSystem) -> None:
    config = {"guardrails": {"policies": {"token_budget": {"per_request": 10, "block_on_exceeded": False}}}}
    rails = LLMRails(config, provider=FakeModelProvider(["fine"]), system=system)
    result = await rails.agenerate("word " * 50)
    assert result.passed and result.text == "fine" and result.action is Action.WARN
    assert result.verdicts["token_budget"].action is Action.WARN


async def test_per_run_budget_counts_model_output(system: GuardrailSystem) -> None:
    config = {"guardrails": {"policies": {"token_budget": {"per_run": 300}}}}
    long_reply = ModelResponse(text="...", usage=TokenUsage(input_tokens=20, output_tokens=280))
    provider = FakeModelProvider([long_reply, "second"])
    rails = LLMRails(config, provider=provider, system=system)
    assert (await rails.agenerate("hi", run_id="r1")).passed
    second = await rails.agenerate("hi again", run_id="r1")
    assert second.blocked_at == "input" and second.error == "per_run_exceeded" and provider.calls == 1


def test_sync_generate_uses_the_sync_model_path(system: GuardrailSystem) -> None:
    rails = LLMRails(provider=FakeModelProvider(["sync reply"]), system=system)
    assert rails.generate("hello").text == "sync reply"


async def test_provider_failure_raises_and_is_recorded(
    system: GuardrailSystem, recorder: InMemoryRecorder
) -> None:
    rails = LLMRails(
        provider=FakeModelProvider([ModelProviderError("fake call failed: boom")]), system=system
    )
    with pytest.raises(ModelProviderError):
        await rails.agenerate("hello")
    (event,) = recorder.of_kind(EventKind.GENERATE)
    assert event.payload["model_called"] is True and event.payload["error"] == "fake call failed: boom"


def test_model_selection_and_missing_model_errors() -> None:
    from stockade.guardrails import ConfigError

    two = {
        "models": [
            {"provider": "openai", "model": "a"},
            {"name": "cheap", "provider": "openai", "model": "b"},
        ]
    }
    rails = LLMRails(two, model="cheap", provider=FakeModelProvider(), system=_null_system())
    assert rails.model_config is not None and rails.model_config.model == "b"
    with pytest.raises(ConfigError, match="no model named 'nope'"):
        LLMRails(two, model="nope", provider=FakeModelProvider(), system=_null_system())
    with pytest.raises(ConfigError, match="no model configured"):
        LLMRails(system=_null_system())


def _null_system() -> GuardrailSystem:
    return GuardrailSystem(
        {"guardrails": {"checks": {n: {"enabled": False} for n in ("pii", "exfiltration", "classification")}}}
    )


def test_policy_and_rails_names_are_exported() -> None:
    import stockade.guardrails as g
    import stockade.guardrails.testing as testing

    for name in ("LLMRails", "PolicyEngine", "AgentHooks", "Approval", "ModelConfig", "GenerationResult"):
        assert name in g.__all__ and hasattr(g, name)
    assert "FakeModelProvider" in testing.__all__


async def test_policy_events_reach_the_systems_recorder(
    system: GuardrailSystem, recorder: InMemoryRecorder
) -> None:
    rails = LLMRails(provider=FakeModelProvider(["ok"]), system=system)
    await rails.agenerate("hello", session_id="s9")
    (budget_event,) = recorder.of_kind(EventKind.TOKEN_BUDGET)
    assert budget_event.session_id == "s9" and budget_event.payload["request_tokens"] > 0


async def test_request_quota_counted_by_generate_when_asked(system: GuardrailSystem) -> None:
    config = {"guardrails": {"policies": {"rate_limits": {"requests_per_session": 2}}}}
    provider = FakeModelProvider(["ok"])
    rails = LLMRails(config, provider=provider, system=system, count_requests=True)
    assert (await rails.agenerate("a", session_id="s")).passed
    assert (await rails.agenerate("b", session_id="s")).passed
    third = await rails.agenerate("c", session_id="s")
    assert third.blocked_at == "input" and third.error == "request_quota_exceeded" and provider.calls == 2
    assert (await rails.agenerate("d", session_id="other")).passed


async def test_tool_calls_are_returned_for_authorization(system: GuardrailSystem) -> None:
    from stockade.guardrails.messages import ToolCall

    call = ToolCall(id="c1", name="get_weather", arguments={"city": "Paris"})
    ok = ModelResponse(text="checking", tool_calls=[call])
    bad = ModelResponse(text="an exploit", tool_calls=[call])
    rails = LLMRails(provider=FakeModelProvider([ok, bad]), system=system)
    assert (await rails.agenerate("weather?")).tool_calls == [call]
    blocked = await rails.agenerate("weather?")
    assert blocked.blocked_at == "output" and blocked.tool_calls == []


async def test_an_unknown_option_is_refused_before_anything_runs(system: GuardrailSystem) -> None:
    provider = FakeModelProvider(["never"])
    rails = LLMRails(provider=provider, system=system)
    with pytest.raises(TypeError, match="sesion_id"):
        await rails.agenerate("hello", sesion_id="s1")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="sesion_id"):
        rails.astream("hello", sesion_id="s1")  # type: ignore[call-arg]
    assert provider.calls == 0
