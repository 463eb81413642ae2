"""Google Gemini through the official ``google-genai`` SDK, sync, async and streaming."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

from stockade.guardrails.extras import require
from stockade.guardrails.llm.config import ModelConfig
from stockade.guardrails.llm.providers.base import ModelProviderError, StreamChunk, error_summary
from stockade.guardrails.messages import ChatRequest, ModelResponse, TokenUsage, ToolCall


def _usage(response: Any) -> TokenUsage | None:
    meta = getattr(response, "usage_metadata", None)
    if meta is None:
        return None
    return TokenUsage(
        input_tokens=meta.prompt_token_count or 0, output_tokens=meta.candidates_token_count or 0
    )


class GeminiProvider:
    """``provider: gemini`` (the Gemini Developer API; ``base_url`` overrides the endpoint)."""

    def __init__(self, config: ModelConfig) -> None:
        genai = require("google.genai", extra="providers", feature="the gemini provider")
        self._types = require("google.genai.types", extra="providers", feature="the gemini provider")
        self._errors_mod = require("google.genai.errors", extra="providers", feature="the gemini provider")
        self.config, self.model = config, config.model
        self.provider: str = config.provider
        secret = config.resolve_api_key()
        http_options: dict[str, Any] = {"timeout": int(config.timeout_seconds * 1000)}
        if config.base_url:
            http_options["base_url"] = config.base_url
        self._client = genai.Client(
            api_key=secret.get_secret_value() if secret else None,
            http_options=self._types.HttpOptions(**http_options),
        )

    def _params(self, request: ChatRequest) -> dict[str, Any]:
        t = self._types
        contents = [
            t.Content(role="model" if m.role == "assistant" else "user", parts=[t.Part(text=m.content)])
            for m in request.messages
            if m.role != "system"
        ]
        system = "\n\n".join(
            [request.system or ""] + [m.content for m in request.messages if m.role == "system"]
        )
        config: dict[str, Any] = {"max_output_tokens": request.max_tokens or self.config.max_output_tokens}
        if system.strip():
            config["system_instruction"] = system.strip()
        if request.temperature is not None:
            config["temperature"] = request.temperature
        if request.tools:
            declarations = [
                t.FunctionDeclaration(
                    name=d.name, description=d.description, parameters_json_schema=d.parameters
                )
                for d in request.tools
            ]
            config["tools"] = [t.Tool(function_declarations=declarations)]
        return {"model": self.model, "contents": contents, "config": t.GenerateContentConfig(**config)}

    def _response(self, response: Any) -> ModelResponse:
        candidates = response.candidates or []
        finish = candidates[0].finish_reason if candidates else None
        parts = candidates[0].content.parts or [] if candidates and candidates[0].content else []
        calls = [
            ToolCall(
                id=p.function_call.id,
                name=p.function_call.name or "",
                arguments=dict(p.function_call.args or {}),
            )
            for p in parts
            if getattr(p, "function_call", None) is not None
        ]
        return ModelResponse(
            text=_text(response),
            tool_calls=calls,
            usage=_usage(response) or TokenUsage(),
            model=getattr(response, "model_version", None) or self.model,
            finish_reason=str(finish.value if hasattr(finish, "value") else finish) if finish else None,
        )

    def complete(self, request: ChatRequest) -> ModelResponse:
        try:
            return self._response(self._client.models.generate_content(**self._params(request)))
        except self._errors_mod.APIError as exc:
            raise ModelProviderError(error_summary(self.provider, exc)) from exc

    async def acomplete(self, request: ChatRequest) -> ModelResponse:
        try:
            return self._response(await self._client.aio.models.generate_content(**self._params(request)))
        except self._errors_mod.APIError as exc:
            raise ModelProviderError(error_summary(self.provider, exc)) from exc

    def stream(self, request: ChatRequest) -> Iterator[StreamChunk]:
        try:
            for response in self._client.models.generate_content_stream(**self._params(request)):
                yield StreamChunk(text=_text(response), usage=_usage(response))
        except self._errors_mod.APIError as exc:
            raise ModelProviderError(error_summary(self.provider, exc)) from exc

    async def astream(self, request: ChatRequest) -> AsyncIterator[StreamChunk]:
        try:
            stream = await self._client.aio.models.generate_content_stream(**self._params(request))
            async for response in stream:
                yield StreamChunk(text=_text(response), usage=_usage(response))
        except self._errors_mod.APIError as exc:
            raise ModelProviderError(error_summary(self.provider, exc)) from exc

    async def aclose(self) -> None:
        await self._client.aio.aclose()
        self._client.close()


def _text(response: Any) -> str:
    """Concatenated text parts of the first candidate (``response.text`` warns on non-text parts)."""
    candidates = response.candidates or []
    if not candidates or candidates[0].content is None:
        return ""
    return "".join(p.text for p in candidates[0].content.parts or [] if getattr(p, "text", None))
