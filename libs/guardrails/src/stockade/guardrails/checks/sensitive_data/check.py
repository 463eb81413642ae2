"""The sensitive-data check: a transformer NER model finds personal data; findings are masked or block."""

from __future__ import annotations

import asyncio

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

    async def run(self, text: str, ctx: CheckContext) -> CheckResult:
        entities = await asyncio.to_thread(self.classifier.detect, text)
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
