"""The PII/PHI check: Presidio analyzer finds entities, ``postfilter`` keeps each on one line and drops PERSON
findings that cannot be names, each entity type's policy decides (allow, mask, redact, hash, block), Presidio
anonymizer operators produce the replacement, and every acted-on entity leaves a ``pii_audit`` event (type,
score, action, session, timestamp; never the value)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from stockade.guardrails.checks.base import CheckContext
from stockade.guardrails.checks.config import ContentChecksConfig, PiiAction, PiiConfig
from stockade.guardrails.checks.pii.engine import (
    SharedAnalyzer,
    ensure_importable,
    operators,
    shared_analyzer,
)
from stockade.guardrails.checks.pii.postfilter import (
    address_continuation,
    clip_to_line,
    person_cue,
    plausible_person,
    single_word,
)
from stockade.guardrails.events import EventKind, GuardrailEvent
from stockade.guardrails.verdict import Action, CheckResult, Finding

_TO_ACTION = {
    PiiAction.ALLOW: Action.ALLOW,
    PiiAction.MASK: Action.MASK,
    PiiAction.REDACT: Action.MASK,
    PiiAction.HASH: Action.MASK,
    PiiAction.BLOCK: Action.BLOCK,
}


class PiiCheck:
    name = "pii"

    def __init__(self, config: PiiConfig) -> None:
        ensure_importable(config.spacy_model)
        self.config = config
        self.stages = frozenset(config.stages)
        thresholds = [config.policy(e).threshold for e in config.entities]
        self._min_threshold = min(thresholds, default=config.default_threshold)

    async def warmup(self) -> None:
        await asyncio.to_thread(self.analyze, "warm up John Smith")

    async def run(self, text: str, ctx: CheckContext) -> CheckResult:
        findings = await asyncio.to_thread(self.analyze, text)
        if self.config.audit:
            for f in findings:
                ctx.record(
                    GuardrailEvent(
                        kind=EventKind.PII_AUDIT,
                        name=self.name,
                        session_id=ctx.session_id,
                        run_id=ctx.run_id,
                        action=str(f.detail["policy"]),
                        payload={
                            "entity_type": f.type,
                            "score": f.score,
                            "action": f.detail["policy"],
                            "stage": ctx.stage.value,
                            "start": f.start,
                            "end": f.end,
                        },
                    )
                )
        action = Action.strongest([f.action for f in findings])
        return CheckResult(
            check=self.name,
            action=action,
            findings=findings,
            score=max((f.score for f in findings), default=0.0),
        )

    def analyzer(self) -> SharedAnalyzer:
        """The process-wide Presidio analyzer of this configuration (loaded on first use)."""
        cfg = self.config
        return shared_analyzer(
            cfg.spacy_model,
            cfg.language,
            cfg.phi_recognizers,
            cfg.offline_suffix_list,
            cfg.pattern_recognizers,
            cfg.disable_parser,
            cfg.lemmas,
            cfg.ner_matmul,
        )

    def analyze(self, text: str) -> list[Finding]:
        cfg = self.config
        results = self.analyzer().analyze(
            text, language=cfg.language, entities=cfg.entities, score_threshold=self._min_threshold
        )
        return self.select(text, results)

    def select(
        self, text: str, results: list[Any], threshold: Callable[[str], float] | None = None
    ) -> list[Finding]:
        """The findings the check acts on among the analyzer's ``results`` for ``text``: at or above the
        entity type's threshold (``threshold(entity_type)``, default the policy's), cut to one line, PERSON
        only where it can be a name, and none inside another at least as strong."""
        threshold = threshold or (lambda entity: self.config.policy(entity).threshold)
        findings = []
        for r in results:
            span = clip_to_line(text, r.start, r.end)
            if span is None or r.score < threshold(r.entity_type):
                continue
            if r.entity_type == "PERSON" and not self._person(text, *span):
                continue
            findings.append(self._finding(text, r, span))
            if r.entity_type == "STREET_ADDRESS":
                findings += [self._finding(text, r, more) for more in address_continuation(text, span[1])]
        return drop_contained(findings)

    def _person(self, text: str, start: int, end: int) -> bool:
        if not plausible_person(text, start, end):
            return False
        lone = self.config.single_word_names == "with_context" and single_word(text, start, end)
        return not lone or person_cue(text, start, end)

    def _finding(self, text: str, result: Any, span: tuple[int, int] | None = None) -> Finding:
        """A finding of one analyzer result, over ``span`` (default: the result's own offsets)."""
        start, end = span or (result.start, result.end)
        policy = self.config.policy(result.entity_type).action
        detail: dict[str, Any] = {"policy": policy.value}
        if _TO_ACTION[policy] is Action.MASK:
            detail["replacement"] = self._replacement(text[start:end], result.entity_type, policy)
        return Finding(
            check=self.name,
            type=result.entity_type,
            start=start,
            end=end,
            score=round(float(result.score), 4),
            action=_TO_ACTION[policy],
            detail=detail,
        )

    def _replacement(self, value: str, entity: str, policy: PiiAction) -> str:
        ops = operators()
        if policy is PiiAction.REDACT:
            return str(ops["redact"].operate(value, {}))
        if policy is PiiAction.HASH:
            params: dict[str, Any] = {"hash_type": "sha256"}
            if self.config.hash_salt:
                params["salt"] = self.config.hash_salt
            return str(ops["hash"].operate(value, params))
        return str(ops["mask"].operate(value, {"new_value": f"<{entity}>"}))


def drop_contained(findings: list[Finding]) -> list[Finding]:
    """Drop a finding lying inside another whose action is at least as strong (it adds nothing to masking or
    blocking). Partly overlapping findings are all kept; masking merges their spans."""
    ordered = sorted(findings, key=lambda f: (-((f.end or 0) - (f.start or 0)), -f.action.severity, -f.score))
    kept: list[Finding] = []
    for f in ordered:
        if any(
            (k.start or 0) <= (f.start or 0)
            and (f.end or 0) <= (k.end or 0)
            and k.action.severity >= f.action.severity
            for k in kept
        ):
            continue
        kept.append(f)
    return sorted(kept, key=lambda f: (f.start or 0, f.end or 0))


def build(config: ContentChecksConfig) -> PiiCheck:
    return PiiCheck(config.pii)
