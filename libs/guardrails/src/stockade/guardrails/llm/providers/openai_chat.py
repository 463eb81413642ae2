"""OpenAI and Azure OpenAI through the official ``openai`` SDK (Chat Completions), sync, async and streaming."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

from stockade.guardrails.extras import require
from stockade.guardrails.llm.config import ModelConfig
from stockade.guardrails.llm.providers.base import (
    ModelProviderError,
    SdkClientPair,
    StreamChunk,
    error_summary,
    sdk_client_options,
)
from stockade.guardrails.messages import ChatRequest, ModelResponse, TokenUsage, ToolCall


def _messages(request: ChatRequest) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if request.system:
        out.append({"role": "system", "content": request.system})
    for m in request.messages:
        role = (
            "user" if m.role == "tool" else m.role
        )  # tool results without a tool_call_id go in as user text
        out.append({"role": role, "content": m.content})
    return out


def _json_args(raw: str | None) -> dict[str, Any]:
    """OpenAI sends arguments as a JSON string; anything but a JSON object becomes {"_raw": text}."""
    try:
        value = json.loads(raw or "{}")
    except ValueError:
        return {"_raw": raw}
    return value if isinstance(value, dict) else {"_raw": raw}


def _chunk(chunk: Any) -> StreamChunk | None:
    text = (chunk.choices[0].delta.content or "") if chunk.choices else ""
    usage = None
    if chunk.usage is not None:
        usage = TokenUsage(
            input_tokens=chunk.usage.prompt_tokens, output_tokens=chunk.usage.completion_tokens
        )
    return StreamChunk(text=text, usage=usage) if text or usage else None


class OpenAIProvider(SdkClientPair):
    """``provider: openai`` or ``azure_openai`` (``model`` is then the Azure deployment name)."""

    def __init__(self, config: ModelConfig) -> None:
        openai = require("openai", extra="providers", feature=f"the {config.provider} provider")
        self.config, self.model = config, config.model
        self.provider: str = config.provider
        azure = config.provider == "azure_openai"
        common = sdk_client_options(config, base_url=not azure)
        if azure:
            common.update(azure_endpoint=config.base_url, api_version=config.api_version)
            self._client = openai.AzureOpenAI(**common)
            self._aclient = openai.AsyncAzureOpenAI(**common)
        else:
            self._client = openai.OpenAI(**common)
            self._aclient = openai.AsyncOpenAI(**common)
        self._errors: tuple[type[BaseException], ...] = (openai.OpenAIError,)

    def _params(self, request: ChatRequest) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self.model,
            "messages": _messages(request),
            "max_tokens": request.max_tokens or self.config.max_output_tokens,
        }
        if request.temperature is not None:
            params["temperature"] = request.temperature
        if request.tools:
            params["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
                }
                for t in request.tools
            ]
        return params

    def _response(self, completion: Any) -> ModelResponse:
        if not completion.choices:
            raise ModelProviderError(f"{self.provider} reply has no choices")
        choice = completion.choices[0]
        usage = completion.usage
        calls = [
            ToolCall(id=c.id, name=c.function.name, arguments=_json_args(c.function.arguments))
            for c in (choice.message.tool_calls or [])
            if getattr(c, "function", None) is not None
        ]
        return ModelResponse(
            text=choice.message.content or "",
            tool_calls=calls,
            usage=TokenUsage(
                input_tokens=usage.prompt_tokens if usage else 0,
                output_tokens=usage.completion_tokens if usage else 0,
            ),
            model=completion.model or self.model,
            finish_reason=choice.finish_reason,
        )

    def complete(self, request: ChatRequest) -> ModelResponse:
        try:
            return self._response(self._client.chat.completions.create(**self._params(request)))
        except self._errors as exc:
            raise ModelProviderError(error_summary(self.provider, exc)) from exc

    async def acomplete(self, request: ChatRequest) -> ModelResponse:
        try:
            return self._response(await self._aclient.chat.completions.create(**self._params(request)))
        except self._errors as exc:
            raise ModelProviderError(error_summary(self.provider, exc)) from exc

    def _stream_params(self, request: ChatRequest) -> dict[str, Any]:
        return {**self._params(request), "stream": True, "stream_options": {"include_usage": True}}

    def stream(self, request: ChatRequest) -> Iterator[StreamChunk]:
        try:
            for chunk in self._client.chat.completions.create(**self._stream_params(request)):
                if (piece := _chunk(chunk)) is not None:
                    yield piece
        except self._errors as exc:
            raise ModelProviderError(error_summary(self.provider, exc)) from exc

    async def astream(self, request: ChatRequest) -> AsyncIterator[StreamChunk]:
        try:
            async for chunk in await self._aclient.chat.completions.create(**self._stream_params(request)):
                if (piece := _chunk(chunk)) is not None:
                    yield piece
        except self._errors as exc:
            raise ModelProviderError(error_summary(self.provider, exc)) from exc
