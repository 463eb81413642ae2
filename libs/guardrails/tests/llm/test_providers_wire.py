"""Each provider adapter through its official SDK against a local server speaking that provider's wire format.

The SDKs really build, send and parse HTTP (JSON, server-sent events, AWS event stream) on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from stockade.guardrails.events import EventKind
from stockade.guardrails.llm.config import ModelConfig
from stockade.guardrails.llm.providers import ModelProvider, ModelProviderError, build_provider
from stockade.guardrails.llm.rails import LLMRails
from stockade.guardrails.messages import ChatRequest, ToolDefinition
from stockade.guardrails.system import GuardrailSystem
from stockade.guardrails.testing import InMemoryRecorder

KEY = "sk-test-DO-NOT-LEAK-0123456789"
PROVIDERS = ["openai", "azure_openai", "anthropic", "gemini", "bedrock"]
TOOL = ToolDefinition(
    name="get_weather",
    description="Weather by city",
    parameters={"type": "object", "properties": {"city": {}}},
)


@pytest.fixture(autouse=True)
def credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for env in ("OPENAI_API_KEY", "AZURE_OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.setenv(env, KEY)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", KEY)
    monkeypatch.setenv("AWS_REGION", "us-east-1")


def _config(kind: str, base: str) -> ModelConfig:
    settings: dict[str, Any] = {
        "openai": {"model": "gpt-4o-mini", "base_url": f"{base}/v1"},
        "azure_openai": {"model": "my-deployment", "base_url": base, "api_version": "2024-10-21"},
        "anthropic": {"model": "claude-stockade-test", "base_url": base},
        "gemini": {"model": "gemini-2.5-flash", "base_url": base},
        "bedrock": {"model": "anthropic.claude-3-haiku-20240307-v1:0", "base_url": base},
    }[kind]
    return ModelConfig(
        provider=kind, max_retries=0, input_price_per_mtok="1", output_price_per_mtok="2", **settings
    )


@pytest.fixture(params=PROVIDERS)
def provider(request: pytest.FixtureRequest, wire_server: Any) -> Iterator[ModelProvider]:
    yield build_provider(_config(request.param, wire_server.base))


def _request(text: str) -> ChatRequest:
    return ChatRequest.model_validate(
        {
            "system": "Be brief.",
            "messages": [{"role": "user", "content": text}],
            "tools": [TOOL],
            "max_tokens": 64,
        }
    )


def _auth_seen(provider: ModelProvider, headers: dict[str, str]) -> None:
    if provider.provider == "openai":
        assert headers["authorization"] == f"Bearer {KEY}"
    elif provider.provider == "azure_openai":
        assert headers["api-key"] == KEY
    elif provider.provider == "anthropic":
        assert KEY in (headers.get("x-api-key"), headers.get("authorization", "").removeprefix("Bearer "))
    elif provider.provider == "gemini":
        assert headers["x-goog-api-key"] == KEY
    else:
        assert headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")


def test_sync_call(provider: ModelProvider, wire_server: Any) -> None:
    response = provider.complete(_request("hello there"))
    assert response.text == "You said: hello there"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (11, 7)
    sent = wire_server.last()
    _auth_seen(provider, sent["headers"])
    expected_path = {
        "openai": "/v1/chat/completions",
        "azure_openai": "/openai/deployments/my-deployment/chat/completions",
        "anthropic": "/v1/messages",
        "gemini": "/models/gemini-2.5-flash:generateContent",
        "bedrock": "/model/anthropic.claude-3-haiku-20240307-v1:0/converse",
    }[provider.provider]
    assert sent["path"].endswith(expected_path)
    if provider.provider == "azure_openai":
        assert sent["query"]["api-version"] == "2024-10-21"
    assert "Be brief." in str(sent["body"]) and "get_weather" in str(sent["body"])


async def test_async_call(provider: ModelProvider) -> None:
    response = await provider.acomplete(_request("async hello"))
    assert response.text == "You said: async hello" and response.usage.output_tokens == 7


async def test_streaming(provider: ModelProvider) -> None:
    chunks = [c async for c in provider.astream(_request("stream please"))]
    assert "".join(c.text for c in chunks) == "You said: stream please"
    assert sum(1 for c in chunks if c.text) > 1
    usages = [c.usage for c in chunks if c.usage is not None]
    assert usages and usages[-1].output_tokens == 7


async def test_http_error_becomes_provider_error_without_secrets(provider: ModelProvider) -> None:
    with pytest.raises(ModelProviderError) as info:
        await provider.acomplete(_request("please FAIL"))
    assert "400" in str(info.value) and KEY not in str(info.value) and "please FAIL" not in str(info.value)


@pytest.mark.parametrize("kind", PROVIDERS)
async def test_llm_rails_end_to_end(
    kind: str, wire_server: Any, system: GuardrailSystem, recorder: InMemoryRecorder
) -> None:
    cfg = _config(kind, wire_server.base)
    rails = LLMRails({"models": [cfg.model_dump(mode="json", exclude_none=True)]}, system=system)
    result = await rails.agenerate("what is up", system_prompt="Be brief.", session_id="s-1")
    assert result.passed and result.text == "You said: what is up"
    assert result.provider == kind and result.usage.total_tokens == 18
    assert str(result.cost) == "0.000025"  # 11 * 1/1M + 7 * 2/1M
    blocked = await rails.agenerate("please misbehave")  # the reply carries 'exploit': the output rail blocks
    assert blocked.model_called and blocked.blocked_at == "output" and blocked.text is None
    sync = await asyncio.to_thread(rails.generate, "from a thread")
    assert sync.text == "You said: from a thread"
    stream = rails.astream("streamed words")
    assert "".join([p async for p in stream]) == "You said: streamed words"
    sync_text = await asyncio.to_thread(lambda: "".join(rails.stream("sync stream")))
    assert sync_text == "You said: sync stream"
    events = recorder.of_kind(EventKind.GENERATE)
    assert len(events) == 5 and KEY not in str([e.model_dump() for e in recorder.events])
    assert KEY not in repr(rails.model_config) and KEY not in repr(rails.provider.__dict__.get("config"))
    await rails.aclose()


async def test_tool_calls_are_parsed(provider: ModelProvider) -> None:
    response = await provider.acomplete(_request("what is the weather in Paris?"))
    (call,) = response.tool_calls
    assert call.name == "get_weather" and call.arguments == {"city": "Paris", "unit": "celsius"}
    assert (await provider.acomplete(_request("hello"))).tool_calls == []


def test_sync_streaming(provider: ModelProvider) -> None:
    chunks = list(provider.stream(_request("sync stream please")))
    assert "".join(c.text for c in chunks) == "You said: sync stream please"
    assert sum(1 for c in chunks if c.text) > 1 and chunks[-1].usage is not None
