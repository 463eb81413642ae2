"""The classification check with an LLM judge after the classifier (``classification.judge``).

``mode: always``: the judge reads every text; the check blocks when the classifier or the judge says attack.
``mode: when_unsure``: the judge is asked only when the classifier's score falls in ``band`` ([low, high)),
and there its verdict decides (attack: a finding of the judge's category; safe: allowed); outside the band
the classifier decides alone. An unparseable reply acts as ``on_unparseable`` (block by default; ``allow``
leaves the classifier's result). A judge that times out or fails raises, so the check's fail mode decides
(fail-closed by default), unless the classifier already blocked (that result stands).

The judge's tokens are charged to the run's token budget through the callback the system binds
(:meth:`bind_token_budget`), and each call is recorded as a ``check`` event named ``classification_judge``
(verdict, tokens, duration; never the text).
"""

from __future__ import annotations

from collections.abc import Callable

from stockade.guardrails.checks.base import CheckContext, Closes, ContentCheck, WarmsUp, starts_inline
from stockade.guardrails.checks.classification.backend_config import JudgeConfig
from stockade.guardrails.checks.classification.judge import JudgeVerdict, LLMJudge
from stockade.guardrails.errors import CheckUnavailableError
from stockade.guardrails.events import EventKind, GuardrailEvent
from stockade.guardrails.verdict import Action, CheckResult, Finding

EVENT = "classification_judge"
_ACTIONS = {"block": Action.BLOCK, "warn": Action.WARN, "allow": Action.ALLOW}


class JudgedCheck:
    def __init__(self, inner: ContentCheck, config: JudgeConfig, *, judge: LLMJudge | None = None) -> None:
        self.inner, self.config = inner, config
        self.name = inner.name
        self.stages = inner.stages
        self.starts_inline = starts_inline(inner)
        self.judge = judge if judge is not None else LLMJudge(config)
        self._charge: Callable[[str | None, int], None] | None = None

    def bind_token_budget(self, charge: Callable[[str | None, int], None]) -> None:
        """``charge(run_id, tokens)`` is called with each judge call's input and output tokens."""
        self._charge = charge

    async def warmup(self) -> None:
        if isinstance(self.inner, WarmsUp):
            await self.inner.warmup()

    async def aclose(self) -> None:
        await self.judge.aclose()
        if isinstance(self.inner, Closes):
            await self.inner.aclose()

    def wants_judge(self, first: CheckResult) -> bool:
        if not self.config.enabled:
            return False
        low, high = self.config.band
        return self.config.mode == "always" or low <= first.score < high

    async def run(self, text: str, ctx: CheckContext) -> CheckResult:
        first = await self.inner.run(text, ctx)
        if not self.wants_judge(first):
            return first
        spans = [(f.start, f.end) for f in first.findings if f.start is not None and f.end is not None]
        try:
            verdict = await self.judge.judge(text, spans[0] if spans else None)
        except CheckUnavailableError:
            if first.action is Action.BLOCK:
                return first
            raise
        if self._charge is not None:
            self._charge(ctx.run_id, verdict.tokens)
        ctx.record(self._event(verdict, ctx))
        return self.combine(first, verdict)

    def combine(self, first: CheckResult, verdict: JudgeVerdict) -> CheckResult:
        cfg = self.config
        always = cfg.mode == "always"
        detail = {
            "judge": verdict.model,
            "mode": cfg.mode,
            "classifier_score": first.score,
            "input_tokens": verdict.input_tokens,
            "output_tokens": verdict.output_tokens,
        }
        if verdict.attack is None:
            action = _ACTIONS[cfg.on_unparseable]
            if action is Action.ALLOW:
                return first
            finding = Finding(check=self.name, type="judge_unparseable", action=action, detail=detail)
            return _result(self.name, [*first.findings, finding], first.score)
        if not verdict.attack:
            return first if always else CheckResult(check=self.name, score=first.score)
        finding = Finding(
            check=self.name,
            type=verdict.category,
            score=round(verdict.confidence, 4),
            action=_ACTIONS[cfg.action],
            detail=detail,
        )
        kept = first.findings if always else []
        return _result(self.name, [*kept, finding], max(first.score, verdict.confidence))

    def _event(self, verdict: JudgeVerdict, ctx: CheckContext) -> GuardrailEvent:
        label = "unparseable" if verdict.attack is None else "attack" if verdict.attack else "safe"
        return GuardrailEvent(
            kind=EventKind.CHECK,
            name=EVENT,
            session_id=ctx.session_id,
            run_id=ctx.run_id,
            payload={
                "stage": ctx.stage.value,
                "verdict": label,
                "model": verdict.model,
                "input_tokens": verdict.input_tokens,
                "output_tokens": verdict.output_tokens,
                "duration_ms": round(verdict.duration_ms, 3),
            },
        )


def _result(name: str, findings: list[Finding], score: float) -> CheckResult:
    return CheckResult(
        check=name,
        action=Action.strongest([f.action for f in findings]),
        findings=findings,
        score=round(min(1.0, max(0.0, score)), 4),
    )
