"""Test doubles shipped with the library: use them in your own tests instead of models and services.

- :class:`FakeClassifier`: a content check that flags configured words (and can be slow or fail).
- :class:`FakeEncoder`: a deterministic bag-of-words embedding encoder for content classification.
- :class:`InMemoryRecorder`: an event recorder with query helpers.

Other areas append their doubles below in their own sections.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import re
import time
from collections.abc import AsyncIterator, Iterator, Sequence

from stockade.guardrails.checks.base import CheckContext
from stockade.guardrails.checks.config import Stage
from stockade.guardrails.events import EventKind, GuardrailEvent, ListRecorder
from stockade.guardrails.llm.providers.base import StreamChunk
from stockade.guardrails.messages import ChatRequest, ModelResponse, TokenUsage
from stockade.guardrails.verdict import Action, CheckResult, Finding

# --- content checks -------------------------------------------------------------------------------------------


class FakeClassifier:
    """A :class:`~stockade.guardrails.checks.base.ContentCheck` that flags words.

    ``rules`` maps a lower-case word to ``(finding type, action)``. ``delay_s`` makes it slow, ``error``
    makes it raise; ``calls`` counts runs and ``seen`` keeps ``(stage, source, text)`` of each run.
    """

    def __init__(
        self,
        name: str = "fake",
        rules: dict[str, tuple[str, Action]] | None = None,
        *,
        stages: frozenset[Stage] = frozenset({Stage.INPUT, Stage.OUTPUT}),
        delay_s: float = 0.0,
        error: Exception | None = None,
        score: float = 0.9,
    ) -> None:
        self.name = name
        self.stages = stages
        self.rules = dict(rules or {})
        self.delay_s = delay_s
        self.error = error
        self.score = score
        self.calls = 0
        self.seen: list[tuple[Stage, str | None, str]] = []

    async def run(self, text: str, ctx: CheckContext) -> CheckResult:
        self.calls += 1
        self.seen.append((ctx.stage, ctx.source, text))
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self.error is not None:
            raise self.error
        findings = []
        for m in re.finditer(r"\w+", text):
            rule = self.rules.get(m.group().lower())
            if rule is not None:
                kind, action = rule
                findings.append(
                    Finding(
                        check=self.name,
                        type=kind,
                        start=m.start(),
                        end=m.end(),
                        score=self.score,
                        action=action,
                    )
                )
        action = Action.strongest([f.action for f in findings])
        return CheckResult(
            check=self.name, action=action, findings=findings, score=self.score if findings else 0.0
        )


# --- encoders -------------------------------------------------------------------------------------------------


class FakeEncoder:
    """Deterministic embeddings: hashed bag of lower-case words, L2-normalised. Texts sharing words are close."""

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim
        self.calls = 0

    async def encode(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        return [self._one(t) for t in texts]

    def _one(self, text: str) -> list[float]:
        vec = [0.0] * self.dim
        for word in re.findall(r"\w+", text.lower()):
            idx = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "big") % self.dim
            vec[idx] += 1.0
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        return [v / norm for v in vec]


# --- recorders ------------------------------------------------------------------------------------------------


class InMemoryRecorder(ListRecorder):
    """Keeps events in memory, with helpers to query them."""

    def of_kind(self, kind: EventKind) -> list[GuardrailEvent]:
        return [e for e in self.events if e.kind is kind]

    def named(self, name: str) -> list[GuardrailEvent]:
        return [e for e in self.events if e.name == name]

    def clear(self) -> None:
        self.events.clear()


__all__ = ["FakeClassifier", "FakeEncoder", "InMemoryRecorder"]


# --- model providers ------------------------------------------------------------------------------------------


class FakeModelProvider:
    """A :class:`~stockade.guardrails.llm.providers.base.ModelProvider` with scripted replies.

    Each call takes the next reply (a string, a :class:`ModelResponse`, or an exception to raise); the last one
    repeats once the script runs out. ``requests`` keeps every request received, ``delay_s`` makes calls slow,
    ``chunk_chars`` sets the size of streamed chunks. Usage is one token per four characters unless a scripted
    ModelResponse says otherwise.
    """

    def __init__(
        self,
        replies: Sequence[str | ModelResponse | Exception] = ("OK",),
        *,
        model: str = "fake-model",
        delay_s: float = 0.0,
        chunk_chars: int = 8,
    ) -> None:
        if not replies:
            raise ValueError("FakeModelProvider needs at least one reply")
        self.provider, self.model = "fake", model
        self._replies = list(replies)
        self.delay_s, self.chunk_chars = delay_s, chunk_chars
        self.requests: list[ChatRequest] = []

    @property
    def calls(self) -> int:
        return len(self.requests)

    def _next(self, request: ChatRequest) -> ModelResponse:
        self.requests.append(request)
        reply = self._replies.pop(0) if len(self._replies) > 1 else self._replies[0]
        if isinstance(reply, Exception):
            raise reply
        if isinstance(reply, ModelResponse):
            return reply
        chars = sum(len(m.content) for m in request.messages) + len(request.system or "")
        usage = TokenUsage(input_tokens=math.ceil(chars / 4), output_tokens=math.ceil(len(reply) / 4))
        return ModelResponse(text=reply, usage=usage, model=self.model, finish_reason="stop")

    def complete(self, request: ChatRequest) -> ModelResponse:
        if self.delay_s:
            time.sleep(self.delay_s)
        return self._next(request)

    async def acomplete(self, request: ChatRequest) -> ModelResponse:
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        return self._next(request)

    def stream(self, request: ChatRequest) -> Iterator[StreamChunk]:
        response = self.complete(request)
        for i in range(0, len(response.text), self.chunk_chars):
            yield StreamChunk(text=response.text[i : i + self.chunk_chars])
        yield StreamChunk(usage=response.usage)

    async def astream(self, request: ChatRequest) -> AsyncIterator[StreamChunk]:
        response = await self.acomplete(request)
        for i in range(0, len(response.text), self.chunk_chars):
            yield StreamChunk(text=response.text[i : i + self.chunk_chars])
        yield StreamChunk(usage=response.usage)

    async def aclose(self) -> None:
        return None


__all__ += ["FakeModelProvider"]
