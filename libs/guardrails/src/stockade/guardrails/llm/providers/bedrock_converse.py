"""AWS Bedrock through ``boto3`` ``bedrock-runtime`` (Converse and ConverseStream).

boto3 is synchronous: the async methods run the call in a worker thread, and streaming reads the event stream
in a thread and hands chunks to the event loop through a queue. Credentials come from boto3's own chain
(environment, profile, instance role); ``base_url`` is the bedrock-runtime ``endpoint_url``.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

from stockade.guardrails.extras import require
from stockade.guardrails.llm.config import ModelConfig
from stockade.guardrails.llm.providers.base import ModelProviderError, StreamChunk, error_summary
from stockade.guardrails.messages import ChatRequest, ModelResponse, TokenUsage, ToolCall

_DONE = object()


def _usage(data: dict[str, Any] | None) -> TokenUsage:
    data = data or {}
    return TokenUsage(input_tokens=data.get("inputTokens", 0), output_tokens=data.get("outputTokens", 0))


class BedrockProvider:
    """``provider: bedrock`` (``model`` is the Bedrock model id or inference profile)."""

    def __init__(self, config: ModelConfig) -> None:
        boto3 = require("boto3", extra="providers", feature="the bedrock provider")
        botocore_config = require("botocore.config", extra="providers", feature="the bedrock provider")
        self._botocore_exc = require("botocore.exceptions", extra="providers", feature="the bedrock provider")
        self.config, self.model = config, config.model
        self.provider: str = config.provider
        region = config.region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
        self._client = boto3.client(
            "bedrock-runtime",
            region_name=region,
            endpoint_url=config.base_url,
            config=botocore_config.Config(
                read_timeout=config.timeout_seconds,
                connect_timeout=min(config.timeout_seconds, 10),
                retries={"max_attempts": config.max_retries + 1, "mode": "standard"},
            ),
        )

    def _params(self, request: ChatRequest) -> dict[str, Any]:
        messages = [
            {"role": "assistant" if m.role == "assistant" else "user", "content": [{"text": m.content}]}
            for m in request.messages
            if m.role != "system"
        ]
        params: dict[str, Any] = {"modelId": self.model, "messages": messages}
        system = [request.system or ""] + [m.content for m in request.messages if m.role == "system"]
        if any(s.strip() for s in system):
            params["system"] = [{"text": s} for s in system if s.strip()]
        inference: dict[str, Any] = {"maxTokens": request.max_tokens or self.config.max_output_tokens}
        if request.temperature is not None:
            inference["temperature"] = request.temperature
        params["inferenceConfig"] = inference
        if request.tools:
            params["toolConfig"] = {
                "tools": [
                    {
                        "toolSpec": {
                            "name": t.name,
                            "description": t.description or t.name,
                            "inputSchema": {"json": t.parameters},
                        }
                    }
                    for t in request.tools
                ]
            }
        return params

    def _errors(self) -> tuple[type[BaseException], ...]:
        return (self._botocore_exc.BotoCoreError, self._botocore_exc.ClientError)

    def complete(self, request: ChatRequest) -> ModelResponse:
        try:
            reply = self._client.converse(**self._params(request))
        except self._errors() as exc:
            raise ModelProviderError(error_summary(self.provider, exc)) from exc
        content = reply.get("output", {}).get("message", {}).get("content", [])
        calls = [
            ToolCall(
                id=use.get("toolUseId"), name=use.get("name", ""), arguments=dict(use.get("input") or {})
            )
            for use in (block.get("toolUse") for block in content)
            if use
        ]
        return ModelResponse(
            text="".join(block.get("text", "") for block in content),
            tool_calls=calls,
            usage=_usage(reply.get("usage")),
            model=self.model,
            finish_reason=reply.get("stopReason"),
        )

    async def acomplete(self, request: ChatRequest) -> ModelResponse:
        return await asyncio.to_thread(self.complete, request)

    def stream(self, request: ChatRequest) -> Iterator[StreamChunk]:
        try:
            reply = self._client.converse_stream(**self._params(request))
            for event in reply["stream"]:
                if "contentBlockDelta" in event:
                    text = event["contentBlockDelta"].get("delta", {}).get("text", "")
                    if text:
                        yield StreamChunk(text=text)
                elif "metadata" in event:
                    yield StreamChunk(usage=_usage(event["metadata"].get("usage")))
        except self._errors() as exc:
            raise ModelProviderError(error_summary(self.provider, exc)) from exc

    def _pump(self, request: ChatRequest, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[Any]) -> None:
        try:
            for chunk in self.stream(request):
                loop.call_soon_threadsafe(queue.put_nowait, chunk)
            loop.call_soon_threadsafe(queue.put_nowait, _DONE)
        except ModelProviderError as exc:
            loop.call_soon_threadsafe(queue.put_nowait, exc)

    async def astream(self, request: ChatRequest) -> AsyncIterator[StreamChunk]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Any] = asyncio.Queue()
        threading.Thread(target=self._pump, args=(request, loop, queue), daemon=True).start()
        while True:
            item = await queue.get()
            if item is _DONE:
                return
            if isinstance(item, ModelProviderError):
                raise item
            yield item

    async def aclose(self) -> None:
        self._client.close()
