"""The exfiltration check: one risk score from secrets, bulk personal data and abnormal output patterns.

Risk is ``1 - prod(1 - s_i)`` over the per-detector scores. At ``warn_threshold`` the offending spans are
masked (action mask, the spec's "warn (mask)"); at ``block_threshold`` the output is blocked.
"""

from __future__ import annotations

import asyncio
import math

from stockade.guardrails.checks.base import CheckContext
from stockade.guardrails.checks.config import ContentChecksConfig, Stage
from stockade.guardrails.checks.exfiltration.config import ExfiltrationConfig
from stockade.guardrails.checks.exfiltration.patterns import find_abnormal, find_bulk_pii
from stockade.guardrails.checks.exfiltration.policy import SecretsPolicy
from stockade.guardrails.checks.exfiltration.secrets import SecretScanner
from stockade.guardrails.verdict import Action, CheckResult, Finding


class ExfiltrationCheck:
    name = "exfiltration"

    def __init__(self, config: ExfiltrationConfig) -> None:
        self.config = config
        self.stages = frozenset(config.stages)
        sc = config.secrets
        self._scanner = SecretScanner(
            entropy_threshold=sc.entropy_threshold,
            min_token_length=sc.min_token_length,
            use_detect_secrets=sc.detect_secrets,
            disabled_rules=sc.disabled_rules,
            allow_values=sc.allow_values,
            policy=SecretsPolicy(report_weak_passwords=sc.report_weak_passwords),
        )

    async def run(self, text: str, ctx: CheckContext) -> CheckResult:
        return await asyncio.to_thread(self.evaluate, text)

    def evaluate(self, text: str) -> CheckResult:
        cfg = self.config
        raw: list[tuple[str, int, int, str, float]] = []  # detector, start, end, type, score
        if cfg.secrets.enabled:
            raw += [("secrets", h.start, h.end, h.rule, h.score) for h in self._scanner.scan(text)]
        if cfg.bulk_pii.enabled:
            pii = find_bulk_pii(text)
            if len(pii) >= cfg.bulk_pii.min_entities:
                bulk = min(0.95, 0.25 + 0.35 * len(pii) / cfg.bulk_pii.min_entities)
                raw += [("bulk_pii", h.start, h.end, h.type, bulk) for h in pii]
        if cfg.patterns.enabled:
            raw += [("patterns", h.start, h.end, h.type, h.score) for h in find_abnormal(text, cfg.patterns)]
        per_detector: dict[str, float] = {}
        for detector, *_, score in raw:
            per_detector[detector] = max(per_detector.get(detector, 0.0), score)
        risk = 1.0 - math.prod(1.0 - s for s in per_detector.values())
        if risk >= cfg.block_threshold:
            action = Action.BLOCK
        elif risk >= cfg.warn_threshold:
            action = Action.MASK
        else:
            action = Action.ALLOW if not raw else Action.WARN
        findings = [
            Finding(
                check=self.name,
                type=kind,
                start=start,
                end=end,
                score=round(score, 4),
                action=Action.MASK if action is not Action.ALLOW and end > start else Action.WARN,
                detail={"detector": detector, "replacement": f"<{kind.upper()}>"},
            )
            for detector, start, end, kind, score in raw
        ]
        if action is Action.MASK and not any(f.action is Action.MASK for f in findings):
            action = Action.WARN
        return CheckResult(check=self.name, action=action, findings=findings, score=round(risk, 4))


def build(config: ContentChecksConfig) -> ExfiltrationCheck:
    if {Stage.INPUT, Stage.CONTEXT} & set(config.exfiltration.stages):  # the config validator guards too
        raise ValueError("exfiltration detection is output-only")
    return ExfiltrationCheck(config.exfiltration)
