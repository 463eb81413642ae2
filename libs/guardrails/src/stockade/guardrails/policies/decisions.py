"""Policy decisions as Verdicts, and the events every decision records."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from stockade.guardrails.events import EventKind, EventRecorder, GuardrailEvent
from stockade.guardrails.verdict import Action, CheckResult, Finding, Verdict


class PolicyVerdict(Verdict):
    """A policy decision: a Verdict whose ``stage`` names the policy, plus the non-sensitive detail of the
    decision (counts, limits, tool, approver) for every outcome, allow included."""

    detail: dict[str, Any] = Field(default_factory=dict, description="Counts, limits and names behind it.")


def decision(
    name: str,
    action: Action,
    *,
    reason: str | None = None,
    detail: dict[str, Any] | None = None,
    duration_ms: float = 0.0,
) -> PolicyVerdict:
    """A policy Verdict: ``stage`` is the policy name; a block carries one finding saying why."""
    detail = detail or {}
    passed = action is not Action.BLOCK
    findings: list[Finding] = []
    if action is not Action.ALLOW:
        findings.append(Finding(check=name, type=reason or name, score=1.0, action=action, detail=detail))
    result = CheckResult(
        check=name, action=action, findings=findings, score=0.0 if passed else 1.0, duration_ms=duration_ms
    )
    return PolicyVerdict(
        stage=name,
        detail=detail,
        passed=passed,
        action=action,
        findings=findings,
        results=[result],
        risk_score=result.score,
        timings_ms={name: duration_ms},
        error=None if action is Action.ALLOW else reason,
    )


def record_decision(
    recorder: EventRecorder,
    kind: EventKind,
    verdict: Verdict,
    *,
    session_id: str | None,
    run_id: str | None = None,
    payload: dict[str, Any] | None = None,
) -> None:
    """Record one decision event (no raw arguments or text, only names, counts and reasons)."""
    body = dict(payload or {})
    if verdict.error:
        body.setdefault("reason", verdict.error)
    recorder.record(
        GuardrailEvent(
            kind=kind,
            name=verdict.stage,
            session_id=session_id,
            run_id=run_id,
            action=verdict.action.value,
            payload=body,
        )
    )
