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

from stockade.guardrails.checks.base import CheckContext
from stockade.guardrails.checks.config import Stage
from stockade.guardrails.events import EventKind, GuardrailEvent, ListRecorder
from stockade.guardrails.verdict import Action, CheckResult, Finding

# --- content checks -------------------------------------------------------------------------------------------


class FakeClassifier:
    """A :class:`~stockade.guardrails.checks.base.ContentCheck` that flags words.

    ``rules`` maps a lower-case word to ``(finding type, action)``. ``delay_s`` makes it slow, ``error``
    makes it raise; ``calls`` counts runs.
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

    async def run(self, text: str, ctx: CheckContext) -> CheckResult:
        self.calls += 1
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
