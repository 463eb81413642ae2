"""Rate limits with the in-memory backend: request quota, tool-call quota, cumulative tool time."""

from __future__ import annotations

import asyncio

from stockade.guardrails import Action
from stockade.guardrails.events import EventKind, ListRecorder
from stockade.guardrails.policies import PoliciesConfig, PolicyEngine, RateLimitsConfig


def _engine(recorder: ListRecorder | None = None, **limits: float) -> PolicyEngine:
    return PolicyEngine(PoliciesConfig(rate_limits=RateLimitsConfig(**limits)), recorder=recorder)


async def test_request_quota_is_per_session() -> None:
    engine = _engine(requests_per_session=3)
    results = [await engine.before_request("s1") for _ in range(5)]
    assert [v.passed for v in results] == [True, True, True, False, False]
    assert results[3].error == "request_quota_exceeded"
    assert (await engine.before_request("s2")).passed


async def test_tool_call_quota() -> None:
    engine = _engine(tool_calls_per_session=2)
    assert (await engine.check_tool_call_limit("s1")).passed
    assert (await engine.check_tool_call_limit("s1")).passed
    blocked = await engine.check_tool_call_limit("s1")
    assert blocked.blocked and blocked.error == "tool_call_quota_exceeded"


async def test_cumulative_tool_execution_time_blocks_further_calls() -> None:
    recorder = ListRecorder()
    engine = _engine(recorder, tool_execution_seconds=1.0)
    assert (await engine.check_tool_call_limit("s1")).passed
    ticket = engine.tool_call_started("s1", "slow_search")
    first = await engine.tool_call_finished(ticket, duration_seconds=0.6)
    assert first.action is Action.ALLOW
    assert (await engine.check_tool_call_limit("s1")).passed
    second = await engine.tool_call_finished(
        engine.tool_call_started("s1", "slow_search"), duration_seconds=0.5
    )
    assert second.action is Action.WARN and second.error == "tool_time_exhausted"
    blocked = await engine.check_tool_call_limit("s1")
    assert blocked.blocked and blocked.error == "tool_time_exceeded"
    assert (await engine.check_tool_call_limit("other-session")).passed
    usage = await engine.rate_limiter.usage("s1")
    assert usage["tool_execution_seconds"] == 1.1 and usage["tool_calls"] == 2
    assert all(e.kind is EventKind.RATE_LIMIT for e in recorder.events)
    assert [e.action for e in recorder.events][-2:] == ["block", "allow"]


async def test_measured_tool_time_is_tracked() -> None:
    engine = _engine(tool_execution_seconds=100)
    ticket = engine.tool_call_started("s1", "sleepy")
    await asyncio.sleep(0.05)
    await engine.tool_call_finished(ticket)
    assert (await engine.rate_limiter.usage("s1"))["tool_execution_seconds"] >= 0.05


async def test_concurrent_tasks_never_overshoot_the_quota() -> None:
    engine = _engine(requests_per_session=50)
    verdicts = await asyncio.gather(*(engine.before_request("s1") for _ in range(80)))
    assert sum(v.passed for v in verdicts) == 50


async def test_no_limits_configured_allows_and_counts() -> None:
    recorder = ListRecorder()
    engine = _engine(recorder)
    for _ in range(3):
        assert (await engine.before_request("s1")).action is Action.ALLOW
    assert (await engine.rate_limiter.usage("s1"))["requests"] == 3
    assert [e.payload["count"] for e in recorder.events] == [1, 2, 3]
