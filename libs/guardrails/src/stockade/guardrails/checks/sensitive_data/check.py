"""The sensitive-data check: a transformer NER model finds personal data; findings are masked or block.

Time budget (spec 1, large text): the model reads every window of the text, so the check's time grows with its
length. The runner gives it ``timeout_s`` plus ``timeout_per_kb_s`` per 1,024 characters, at most ``max_timeout_s``
(:meth:`SensitiveDataCheck.timeout_for`), instead of the fixed ``timeout_s``. A text that does not finish within
that budget fails the check, which blocks under the stage's fail-closed default: personal data the model has
not read cannot be vouched for. When the budget runs out the worker stops after the batch of windows in hand
(``stop``), so a timed-out text does not hold the model for the next one.
"""

from __future__ import annotations

import asyncio
import threading

from stockade.guardrails.checks.base import CheckContext
from stockade.guardrails.checks.config import ContentChecksConfig, SensitiveDataConfig
from stockade.guardrails.checks.sensitive_data.model import TokenClassifier
from stockade.guardrails.verdict import Action, CheckResult, Finding


class SensitiveDataCheck:
    name = "sensitive_data"

    def __init__(self, config: SensitiveDataConfig) -> None:
        self.config = config
        self.stages = frozenset(config.stages)
        self.classifier = TokenClassifier(
            config.model,
            device=config.device,
            chunk_tokens=config.chunk_tokens,
            overlap_tokens=config.overlap_tokens,
        )

    async def warmup(self) -> None:
        await asyncio.to_thread(self.classifier.load)

    def timeout_for(self, text: str, base_s: float) -> float:
        """``base_s`` plus ``timeout_per_kb_s`` per 1,024 characters, at most ``max_timeout_s`` (never below
        ``base_s``)."""
        scaled = base_s + self.config.timeout_per_kb_s * len(text) / 1024
        return max(base_s, min(self.config.max_timeout_s, scaled))

    async def run(self, text: str, ctx: CheckContext) -> CheckResult:
        stop = threading.Event()
        try:
            entities = await asyncio.to_thread(self.classifier.detect, text, stop)
        except asyncio.CancelledError:  # out of time: the worker stops at its next batch of windows
            stop.set()
            raise
        wanted = set(self.config.labels)
        action = Action.BLOCK if self.config.block else Action.MASK
        findings = [
            Finding(
                check=self.name,
                type=e.label,
                start=e.start,
                end=e.end,
                score=round(min(1.0, e.score), 4),
                action=action,
                detail={"replacement": f"<{e.label}>"},
            )
            for e in entities
            if e.score >= self.config.threshold and (not wanted or e.label in wanted)
        ]
        return CheckResult(
            check=self.name,
            action=action if findings else Action.ALLOW,
            findings=findings,
            score=max((f.score for f in findings), default=0.0),
        )


def build(config: ContentChecksConfig) -> SensitiveDataCheck:
    return SensitiveDataCheck(config.sensitive_data)
