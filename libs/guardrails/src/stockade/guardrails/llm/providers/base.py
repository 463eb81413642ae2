"""The provider protocol LLMRails drives, and the one error a provider raises."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Protocol, runtime_checkable

from pydantic import BaseModel

from stockade.guardrails.errors import GuardrailError
from stockade.guardrails.llm.messages import ChatRequest, ModelResponse, TokenUsage


class ModelProviderError(GuardrailError):
    """The model call failed (connection, HTTP error, malformed reply). Carries no request text or secret."""


class StreamChunk(BaseModel):
    """A piece of a streamed reply: text, and on the last chunk(s) the usage when the provider reports it."""

    text: str = ""
    usage: TokenUsage | None = None


@runtime_checkable
class ModelProvider(Protocol):
    """One configured model, callable sync, async and streaming."""

    provider: str
    model: str

    def complete(self, request: ChatRequest) -> ModelResponse: ...

    async def acomplete(self, request: ChatRequest) -> ModelResponse: ...

    def stream(self, request: ChatRequest) -> Iterator[StreamChunk]: ...

    def astream(self, request: ChatRequest) -> AsyncIterator[StreamChunk]: ...

    async def aclose(self) -> None: ...


def error_summary(provider: str, exc: BaseException) -> str:
    """A short reason for a failed call: the exception type and HTTP status when there is one."""
    response = getattr(exc, "response", None)
    if isinstance(response, dict):  # botocore ClientError
        status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        code = response.get("Error", {}).get("Code")
        return f"{provider} call failed: {code or type(exc).__name__}" + (
            f" (HTTP {status})" if status else ""
        )
    status = getattr(exc, "status_code", None) or getattr(response, "status_code", None)
    return f"{provider} call failed: {type(exc).__name__}" + (f" (HTTP {status})" if status else "")
