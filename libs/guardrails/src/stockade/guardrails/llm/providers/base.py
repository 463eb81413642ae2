"""The provider protocol LLMRails drives, and the one error a provider raises."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel

from stockade.guardrails.errors import GuardrailError
from stockade.guardrails.messages import ChatRequest, ModelResponse, TokenUsage

if TYPE_CHECKING:
    from stockade.guardrails.llm.config import ModelConfig


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


class SdkClientPair:
    """Base of the providers that hold a vendor SDK's sync and async client side by side."""

    _client: Any
    _aclient: Any

    async def aclose(self) -> None:
        await self._aclient.close()
        self._client.close()


def sdk_client_options(config: ModelConfig, *, base_url: bool = True) -> dict[str, Any]:
    """The keywords the vendor SDK clients take alike: the API key (unwrapped), timeout, retries, and
    ``base_url`` when one is configured (``base_url=False``: the caller passes it under another name)."""
    secret = config.resolve_api_key()
    options: dict[str, Any] = {
        "api_key": secret.get_secret_value() if secret else None,
        "timeout": config.timeout_seconds,
        "max_retries": config.max_retries,
    }
    if base_url and config.base_url:
        options["base_url"] = config.base_url
    return options


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
