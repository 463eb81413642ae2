"""Fixtures for LLMRails tests: a GuardrailSystem whose only content check is the library's FakeClassifier."""

from __future__ import annotations

import json
import struct
import threading
import time
import zlib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from stockade.guardrails import Action
from stockade.guardrails.system import GuardrailSystem
from stockade.guardrails.testing import FakeClassifier, InMemoryRecorder
from stockade.testing.ports import free_port

NO_BUILTIN_CHECKS = {
    "pii": {"enabled": False},
    "exfiltration": {"enabled": False},
    "classification": {"enabled": False},
}


@pytest.fixture
def recorder() -> InMemoryRecorder:
    return InMemoryRecorder()


@pytest.fixture
def classifier() -> FakeClassifier:
    """Blocks 'jailbreak' and 'exploit', masks 'secret', warns on 'sloppy'."""
    return FakeClassifier(
        "fake",
        {
            "jailbreak": ("jailbreak", Action.BLOCK),
            "exploit": ("malicious", Action.BLOCK),
            "secret": ("secret", Action.MASK),
            "sloppy": ("style", Action.WARN),
        },
    )


@pytest.fixture
def system(recorder: InMemoryRecorder, classifier: FakeClassifier) -> GuardrailSystem:
    s = GuardrailSystem({"guardrails": {"checks": NO_BUILTIN_CHECKS}}, recorder=recorder)
    s.add_check(classifier)
    return s


# --- a local HTTP server speaking each provider's wire format ------------------------------------------------
# The provider adapters are tested through their real SDKs against this server on 127.0.0.1: the SDK builds
# the real HTTP request (auth headers, paths, JSON bodies, SSE or AWS event-stream parsing) and parses the reply.
# The server answers "You said: <last user text>" with fixed usage (11 input, 7 output tokens), and answers
# HTTP 400 when the user text contains "FAIL"; "misbehave" adds a word the fake output rail blocks.


IN_TOKENS, OUT_TOKENS = 11, 7
WEATHER = "weather in Paris"  # a user text containing this gets a get_weather tool call back
TOOL_ARGS = {"city": "Paris", "unit": "celsius"}


@dataclass
class WireServer:
    base: str
    requests: list[dict[str, Any]] = field(default_factory=list)

    def last(self) -> dict[str, Any]:
        return self.requests[-1]


def _reply(text: str) -> str:
    """The server's answer: an echo, plus a line the output rail must catch when asked to misbehave."""
    return f"You said: {text}" + (" Here is an exploit." if "misbehave" in text else "")


def _pieces(text: str, size: int = 5) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _sse(events: list[tuple[str | None, dict[str, Any] | str]]) -> StreamingResponse:
    async def body() -> AsyncIterator[bytes]:
        for name, data in events:
            payload = data if isinstance(data, str) else json.dumps(data)
            yield ((f"event: {name}\n" if name else "") + f"data: {payload}\n\n").encode()

    return StreamingResponse(body(), media_type="text/event-stream")


def _eventstream(event_type: str, payload: dict[str, Any]) -> bytes:
    """One AWS event-stream message (prelude, CRCs, string headers, JSON payload)."""
    headers = b""
    for name, value in (
        (":event-type", event_type),
        (":content-type", "application/json"),
        (":message-type", "event"),
    ):
        n, v = name.encode(), value.encode()
        headers += bytes([len(n)]) + n + bytes([7]) + struct.pack(">H", len(v)) + v
    body = json.dumps(payload).encode()
    prelude = struct.pack(">II", 12 + len(headers) + len(body) + 4, len(headers))
    message = prelude + struct.pack(">I", zlib.crc32(prelude)) + headers + body
    return message + struct.pack(">I", zlib.crc32(message))


def _build_app(server: WireServer) -> Starlette:
    async def capture(request: Request, user_text: Any) -> tuple[dict[str, Any], str]:
        body = await request.json()
        text = user_text(body)
        server.requests.append(
            {
                "path": request.url.path,
                "query": dict(request.query_params),
                "headers": dict(request.headers),
                "body": body,
            }
        )
        return body, text

    def failed(text: str) -> Response | None:
        if "FAIL" in text:
            return JSONResponse(
                {"error": {"message": "bad request", "type": "invalid_request_error"}}, status_code=400
            )
        return None

    async def openai_chat(request: Request) -> Response:
        body, text = await capture(
            request, lambda b: [m for m in b["messages"] if m["role"] == "user"][-1]["content"]
        )
        if (err := failed(text)) is not None:
            return err
        reply, model = _reply(text), body["model"]
        usage = {
            "prompt_tokens": IN_TOKENS,
            "completion_tokens": OUT_TOKENS,
            "total_tokens": IN_TOKENS + OUT_TOKENS,
        }
        base = {"id": "chatcmpl-1", "created": int(time.time()), "model": model}
        if body.get("stream"):
            chunks: list[tuple[str | None, dict[str, Any] | str]] = [
                (
                    None,
                    {
                        **base,
                        "object": "chat.completion.chunk",
                        "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}],
                    },
                )
                for p in _pieces(reply)
            ]
            chunks.append((None, {**base, "object": "chat.completion.chunk", "choices": [], "usage": usage}))
            chunks.append((None, "[DONE]"))
            return _sse(chunks)
        return JSONResponse(
            {
                **base,
                "object": "chat.completion",
                "usage": usage,
                "choices": [
                    {
                        "index": 0,
                        "message": {
                            "role": "assistant",
                            "content": reply,
                            "tool_calls": [
                                {
                                    "id": "call_1",
                                    "type": "function",
                                    "function": {"name": "get_weather", "arguments": json.dumps(TOOL_ARGS)},
                                }
                            ],
                        }
                        if WEATHER in text
                        else {"role": "assistant", "content": reply},
                        "finish_reason": "tool_calls" if WEATHER in text else "stop",
                    }
                ],
            }
        )

    async def anthropic_messages(request: Request) -> Response:
        body, text = await capture(
            request, lambda b: [m for m in b["messages"] if m["role"] == "user"][-1]["content"]
        )
        if (err := failed(text)) is not None:
            return err
        reply, model = _reply(text), body["model"]
        if body.get("stream"):
            events: list[tuple[str | None, dict[str, Any] | str]] = [
                (
                    "message_start",
                    {
                        "type": "message_start",
                        "message": {
                            "id": "msg_1",
                            "type": "message",
                            "role": "assistant",
                            "content": [],
                            "model": model,
                            "stop_reason": None,
                            "stop_sequence": None,
                            "usage": {"input_tokens": IN_TOKENS, "output_tokens": 0},
                        },
                    },
                ),
                (
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": 0,
                        "content_block": {"type": "text", "text": ""},
                    },
                ),
            ]
            events += [
                (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}},
                )
                for p in _pieces(reply)
            ]
            events += [
                ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                (
                    "message_delta",
                    {
                        "type": "message_delta",
                        "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                        "usage": {"output_tokens": OUT_TOKENS},
                    },
                ),
                ("message_stop", {"type": "message_stop"}),
            ]
            return _sse(events)
        return JSONResponse(
            {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [{"type": "text", "text": reply}]
                + (
                    [{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": TOOL_ARGS}]
                    if WEATHER in text
                    else []
                ),
                "stop_reason": "tool_use" if WEATHER in text else "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": IN_TOKENS, "output_tokens": OUT_TOKENS},
            }
        )

    def gemini_response(text: str, model: str, finish: str | None = "STOP") -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": text}]}, "index": 0}
        if finish:
            candidate["finishReason"] = finish
        return {
            "candidates": [candidate],
            "modelVersion": model,
            "usageMetadata": {
                "promptTokenCount": IN_TOKENS,
                "candidatesTokenCount": OUT_TOKENS,
                "totalTokenCount": IN_TOKENS + OUT_TOKENS,
            },
        }

    async def gemini(request: Request) -> Response:
        model, _, method = request.path_params["rest"].partition(":")
        body, text = await capture(
            request, lambda b: [c for c in b["contents"] if c.get("role") == "user"][-1]["parts"][0]["text"]
        )
        if (err := failed(text)) is not None:
            return err
        reply = _reply(text)
        if method == "streamGenerateContent":
            parts = _pieces(reply)
            return _sse(
                [
                    (None, gemini_response(p, model, "STOP" if i == len(parts) - 1 else None))
                    for i, p in enumerate(parts)
                ]
            )
        response = gemini_response(reply, model)
        if WEATHER in text:
            call = {"functionCall": {"name": "get_weather", "args": TOOL_ARGS}}
            response["candidates"][0]["content"]["parts"].append(call)
        return JSONResponse(response)

    async def bedrock(request: Request) -> Response:
        body, text = await capture(
            request, lambda b: [m for m in b["messages"] if m["role"] == "user"][-1]["content"][0]["text"]
        )
        if "FAIL" in text:
            return JSONResponse(
                {"message": "bad request"},
                status_code=400,
                headers={"x-amzn-ErrorType": "ValidationException"},
            )
        reply = _reply(text)
        usage = {"inputTokens": IN_TOKENS, "outputTokens": OUT_TOKENS, "totalTokens": IN_TOKENS + OUT_TOKENS}
        if request.path_params["op"] == "converse-stream":
            frames = [_eventstream("messageStart", {"role": "assistant"})]
            frames += [
                _eventstream("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": p}})
                for p in _pieces(reply)
            ]
            frames += [
                _eventstream("contentBlockStop", {"contentBlockIndex": 0}),
                _eventstream("messageStop", {"stopReason": "end_turn"}),
                _eventstream("metadata", {"usage": usage, "metrics": {"latencyMs": 1}}),
            ]
            return Response(b"".join(frames), media_type="application/vnd.amazon.eventstream")
        return JSONResponse(
            {
                "output": {
                    "message": {
                        "role": "assistant",
                        "content": [{"text": reply}]
                        + (
                            [{"toolUse": {"toolUseId": "tu_1", "name": "get_weather", "input": TOOL_ARGS}}]
                            if WEATHER in text
                            else []
                        ),
                    }
                },
                "stopReason": "tool_use" if WEATHER in text else "end_turn",
                "usage": usage,
                "metrics": {"latencyMs": 1},
            }
        )

    return Starlette(
        routes=[
            Route("/v1/chat/completions", openai_chat, methods=["POST"]),
            Route("/openai/deployments/{deployment}/chat/completions", openai_chat, methods=["POST"]),
            Route("/v1/messages", anthropic_messages, methods=["POST"]),
            Route("/v1beta/models/{rest:path}", gemini, methods=["POST"]),
            Route("/v1/models/{rest:path}", gemini, methods=["POST"]),
            Route("/model/{model_id:path}/{op}", bedrock, methods=["POST"]),
        ]
    )


@pytest.fixture(scope="session")
def wire_server() -> Iterator[WireServer]:
    port = free_port()
    server = WireServer(base=f"http://127.0.0.1:{port}")
    uv = uvicorn.Server(uvicorn.Config(_build_app(server), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=uv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not uv.started:
        if time.monotonic() > deadline:
            raise RuntimeError("provider wire server did not start")
        time.sleep(0.01)
    yield server
    uv.should_exit = True
    thread.join(timeout=5)
