"""Run checks concurrently (each with its timeout and fail mode) and aggregate their results into a Verdict."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import Any

from stockade.guardrails.checks.base import CheckContext, ScalesTimeout, WarmsUp, starts_inline
from stockade.guardrails.checks.masking import apply_masks
from stockade.guardrails.checks.registry import CheckSlot
from stockade.guardrails.events import EventKind, GuardrailEvent
from stockade.guardrails.verdict import Action, CheckResult, Verdict


async def run_slot(slot: CheckSlot, text: str, ctx: CheckContext, fail_closed: bool) -> CheckResult:
    """Run one check; a timeout or crash becomes a blocking (fail-closed) or warning (fail-open) result."""
    name = slot.check.name
    closed = fail_closed if slot.fail_closed is None else slot.fail_closed
    started = time.perf_counter()
    check = slot.check
    timeout_s = (
        check.timeout_for(text, slot.timeout_s) if isinstance(check, ScalesTimeout) else slot.timeout_s
    )
    try:
        await warm(slot)
        result = await asyncio.wait_for(check.run(text, ctx), timeout=timeout_s)
    except TimeoutError:
        result = _failed(name, f"{name} timed out after {timeout_s:g}s", closed)
    except Exception as exc:  # a check that cannot run is a decision input, not a crash of the rail
        result = _failed(name, f"{name} failed: {type(exc).__name__}: {exc}", closed)
    result = result.model_copy(update={"duration_ms": (time.perf_counter() - started) * 1000.0})
    ctx.record(_check_event(result, ctx))
    return result


async def warm(slot: CheckSlot) -> None:
    """Run the check's ``warmup()`` once (first use), outside the per-run timeout."""
    if not slot.warmed:
        if isinstance(slot.check, WarmsUp):
            await slot.check.warmup()
        slot.warmed = True


def _failed(name: str, error: str, closed: bool) -> CheckResult:
    return CheckResult(check=name, action=Action.BLOCK if closed else Action.WARN, error=error)


def _check_event(result: CheckResult, ctx: CheckContext) -> GuardrailEvent:
    types = Counter(f.type for f in result.findings)
    payload: dict[str, Any] = {
        "stage": ctx.stage.value,
        "duration_ms": round(result.duration_ms, 3),
        "score": result.score,
        "finding_types": dict(types),
        "error": result.error,
    }
    if ctx.source is not None:
        payload["source"] = ctx.source
    return GuardrailEvent(
        kind=EventKind.CHECK,
        name=result.check,
        session_id=ctx.session_id,
        run_id=ctx.run_id,
        action=result.action.value,
        payload=payload,
    )


async def run_checks(slots: list[CheckSlot], text: str, ctx: CheckContext, fail_closed: bool) -> Verdict:
    """All checks at once. Checks with ``starts_inline = True`` (a short synchronous first step on the event
    loop, e.g. the classification prefilter) are started first, so that step runs before the other checks'
    worker threads start competing with it for the GIL; results keep the slots' order."""
    order = sorted(range(len(slots)), key=lambda i: not starts_inline(slots[i].check))
    tasks = {i: run_slot(slots[i], text, ctx, fail_closed) for i in order}
    done = await asyncio.gather(*tasks.values())
    by_slot = dict(zip(tasks, done, strict=True))
    results = [by_slot[i] for i in range(len(slots))]
    return aggregate(ctx.stage.value, text, results)


def aggregate(stage: str, text: str, results: list[CheckResult]) -> Verdict:
    """Strongest action wins; MASK findings of all checks are applied together to produce ``masked_text``.

    ``error`` says why the rail blocked or masked: "output masked: pii found EMAIL_ADDRESS (2), PERSON (1)"
    (finding types and counts, never values)."""
    action = Action.strongest([r.action for r in results])
    findings = [f for r in results for f in r.findings]
    masked = None
    error = None
    if action is Action.MASK:
        masked = apply_masks(text, findings)
        error = f"{stage} masked: " + "; ".join(
            _describe_masks(r) for r in results if r.action is Action.MASK
        )
    if action is Action.BLOCK:
        reasons = [r.error or _describe(r) for r in results if r.action is Action.BLOCK]
        error = f"{stage} blocked: " + "; ".join(reasons)
    return Verdict(
        stage=stage,
        passed=action is not Action.BLOCK,
        action=action,
        findings=findings,
        results=results,
        masked_text=masked,
        risk_score=max((r.score for r in results), default=0.0),
        timings_ms={r.check: r.duration_ms for r in results},
        error=error,
    )


def _describe(result: CheckResult) -> str:
    types = sorted(
        {f.type for f in result.findings if f.action is Action.BLOCK} or {f.type for f in result.findings}
    )
    return f"{result.check} found {', '.join(types) or 'a violation'}"


def _describe_masks(result: CheckResult) -> str:
    counts = Counter(f.type for f in result.findings if f.action is Action.MASK)
    return f"{result.check} found " + (
        ", ".join(f"{t} ({n})" for t, n in sorted(counts.items())) or "a violation"
    )
