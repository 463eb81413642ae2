"""Anthropic through the official ``anthropic`` SDK (Messages API), sync, async and streaming."""

from __future__ import annotations

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


class _StreamState:
    """Messages stream events -> chunks: input tokens arrive first (message_start), output tokens last."""

    def __init__(self) -> None:
        self.input_tokens = 0

    def chunk(self, event: Any) -> StreamChunk | None:
        if event.type == "message_start":
            self.input_tokens = event.message.usage.input_tokens
        elif event.type == "content_block_delta" and getattr(event.delta, "type", "") == "text_delta":
            return StreamChunk(text=event.delta.text)
        elif event.type == "message_delta":
            return StreamChunk(
                usage=TokenUsage(input_tokens=self.input_tokens, output_tokens=event.usage.output_tokens)
            )
        return None


class AnthropicProvider(SdkClientPair):
    """``provider: anthropic``."""

    def __init__(self, config: ModelConfig) -> None:
        anthropic = require("anthropic", extra="providers", feature="the anthropic provider")
        self.config, self.model = config, config.model
        self.provider: str = config.provider
        common = sdk_client_options(config)
        self._client = anthropic.Anthropic(**common)
        self._aclient = anthropic.AsyncAnthropic(**common)
        self._errors: tuple[type[BaseException], ...] = (anthropic.AnthropicError,)

    def _params(self, request: ChatRequest) -> dict[str, Any]:
        messages = [
            {"role": "assistant" if m.role == "assistant" else "user", "content": m.content}
            for m in request.messages
            if m.role != "system"
        ]
        system = "\n\n".join(
            [request.system or ""] + [m.content for m in request.messages if m.role == "system"]
        )
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens or self.config.max_output_tokens,
            "messages": messages,
        }
        if system.strip():
            params["system"] = system.strip()
        if request.temperature is not None:
            params["temperature"] = request.temperature
        if request.tools:
            params["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters}
                for t in request.tools
            ]
        return params

    def _response(self, message: Any) -> ModelResponse:
        text = "".join(block.text for block in message.content if getattr(block, "type", None) == "text")
        calls = [
            ToolCall(id=block.id, name=block.name, arguments=dict(block.input or {}))
            for block in message.content
            if getattr(block, "type", None) == "tool_use"
        ]
        return ModelResponse(
            text=text,
            tool_calls=calls,
            usage=TokenUsage(
                input_tokens=message.usage.input_tokens, output_tokens=message.usage.output_tokens
            ),
            model=message.model or self.model,
            finish_reason=message.stop_reason,
        )

    def complete(self, request: ChatRequest) -> ModelResponse:
        try:
            return self._response(self._client.messages.create(**self._params(request)))
        except self._errors as exc:
            raise ModelProviderError(error_summary(self.provider, exc)) from exc

    async def acomplete(self, request: ChatRequest) -> ModelResponse:
        try:
            return self._response(await self._aclient.messages.create(**self._params(request)))
        except self._errors as exc:
            raise ModelProviderError(error_summary(self.provider, exc)) from exc

    def stream(self, request: ChatRequest) -> Iterator[StreamChunk]:
        state = _StreamState()
        try:
            for event in self._client.messages.create(**self._params(request), stream=True):
                if (piece := state.chunk(event)) is not None:
                    yield piece
        except self._errors as exc:
            raise ModelProviderError(error_summary(self.provider, exc)) from exc

    async def astream(self, request: ChatRequest) -> AsyncIterator[StreamChunk]:
        state = _StreamState()
        try:
            async for event in await self._aclient.messages.create(**self._params(request), stream=True):
                if (piece := state.chunk(event)) is not None:
                    yield piece
        except self._errors as exc:
            raise ModelProviderError(error_summary(self.provider, exc)) from exc
