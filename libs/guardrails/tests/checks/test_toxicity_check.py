"""Toxicity: the async client against a real local HTTP service (slow, failing, malformed replies)."""

from __future__ import annotations

import pytest

from stockade.guardrails import Action, GuardrailSystem
from stockade.guardrails.checks.base import CheckContext
from stockade.guardrails.checks.config import Stage, ToxicityConfig
from stockade.guardrails.checks.toxicity.breaker import BreakerState, CircuitBreaker
from stockade.guardrails.checks.toxicity.check import ToxicityCheck
from stockade.guardrails.errors import CheckUnavailableError

CTX = CheckContext(stage=Stage.INPUT)
FAST = {
    "retries": 2,
    "backoff_s": 0.01,
    "request_timeout_s": 5.0,  # each scripted reply is used once: a timeout on a loaded machine shifts them all
    "breaker_failures": 3,
    "breaker_reset_s": 60,
}


def make_check(url: str, **kw: object) -> ToxicityCheck:
    return ToxicityCheck(ToxicityConfig(url=url + "/classify", enabled=True, **{**FAST, **kw}))  # type: ignore[arg-type]


async def test_toxic_label_blocks_offensive_warns_non_toxic_allows(scripted_service) -> None:
    Reply = scripted_service.Reply

    check = make_check(scripted_service.url)
    scripted_service.replies.extend(
        [
            Reply(body=[{"label": "toxic", "score": 0.91}, {"label": "non-toxic", "score": 0.09}]),
            Reply(body=[[{"label": "offensive", "score": 0.7}, {"label": "neither", "score": 0.3}]]),
            Reply(body=[{"label": "toxic", "score": 0.2}, {"label": "non-toxic", "score": 0.8}]),
        ]
    )
    toxic = await check.run("you are awful", CTX)
    assert toxic.action is Action.BLOCK and toxic.findings[0].type == "toxic" and toxic.score == 0.91
    offensive = await check.run("meh", CTX)
    assert offensive.action is Action.WARN and offensive.findings[0].type == "offensive"
    clean = await check.run("hello", CTX)
    assert clean.action is Action.ALLOW and clean.findings == []
    assert scripted_service.requests[0] == {"inputs": "you are awful"}
    await check.aclose()


async def test_label_mapping_and_threshold_come_from_config(scripted_service) -> None:
    Reply = scripted_service.Reply

    check = make_check(scripted_service.url, label_map={"LABEL_1": "toxic"}, threshold=0.8)
    scripted_service.replies.extend([Reply(body=[{"label": "LABEL_1", "score": 0.75}])] * 1)
    assert (await check.run("x", CTX)).action is Action.ALLOW
    scripted_service.replies.append(Reply(body=[{"label": "label_1", "score": 0.85}]))
    assert (await check.run("x", CTX)).action is Action.BLOCK
    await check.aclose()


async def test_api_key_is_sent_as_bearer(scripted_service) -> None:
    check = make_check(scripted_service.url, api_key="k-123")
    await check.run("x", CTX)
    assert scripted_service.headers[0]["Authorization"] == "Bearer k-123"
    assert "k-123" not in repr(check.config) and "k-123" not in str(check.config.model_dump())  # L8
    await check.aclose()


async def test_5xx_is_retried_with_backoff_then_succeeds(scripted_service) -> None:
    Reply = scripted_service.Reply

    check = make_check(scripted_service.url)
    scripted_service.replies.extend([Reply(status=503, body={}), Reply(status=500, body={})])
    result = await check.run("x", CTX)
    assert result.action is Action.ALLOW and len(scripted_service.requests) == 3
    await check.aclose()


async def test_slow_service_times_out_and_retries_are_bounded(scripted_service) -> None:
    Reply = scripted_service.Reply

    check = make_check(scripted_service.url, request_timeout_s=0.1, retries=1)
    scripted_service.replies.extend([Reply(delay_s=0.5), Reply(delay_s=0.5)])
    with pytest.raises(CheckUnavailableError, match="2 attempts"):
        await check.run("x", CTX)
    await check.aclose()


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        {"label": "toxic"},
        [],
        [{"label": "toxic", "score": "high"}],
        [{"score": 0.3}],
        [{"label": "toxic", "score": 3}],
    ],
)
async def test_malformed_replies_fail_without_retry(scripted_service, body: object) -> None:
    Reply = scripted_service.Reply

    check = make_check(scripted_service.url)
    scripted_service.default = Reply(body=body)
    with pytest.raises(CheckUnavailableError):
        await check.run("x", CTX)
    assert len(scripted_service.requests) == 1
    await check.aclose()


async def test_circuit_opens_after_failures_and_stops_calling(scripted_service) -> None:
    Reply = scripted_service.Reply

    check = make_check(scripted_service.url, retries=0, breaker_failures=2)
    scripted_service.default = Reply(status=500, body={})
    for _ in range(2):
        with pytest.raises(CheckUnavailableError):
            await check.run("x", CTX)
    calls = len(scripted_service.requests)
    with pytest.raises(CheckUnavailableError, match="circuit is open"):
        await check.run("x", CTX)
    assert len(scripted_service.requests) == calls
    await check.aclose()


def test_breaker_half_opens_after_reset_and_closes_on_success() -> None:
    now = [0.0]
    breaker = CircuitBreaker(2, 10.0, clock=lambda: now[0])
    breaker.failure()
    breaker.failure()
    assert breaker.state is BreakerState.OPEN and not breaker.allow()
    now[0] = 11.0
    assert breaker.state is BreakerState.HALF_OPEN
    assert breaker.allow() and not breaker.allow()  # one trial at a time
    breaker.failure()
    assert breaker.state is BreakerState.OPEN
    now[0] = 22.0
    assert breaker.allow()
    breaker.success()
    assert breaker.state is BreakerState.CLOSED


async def test_service_down_blocks_input_when_fail_closed_and_warns_when_fail_open() -> None:
    # Port 9 on localhost: nothing listens, the connection is refused (a real failure, no mock).
    base = {"pii": {"enabled": False}, "classification": {"enabled": False}}
    tox = {"enabled": True, "url": "http://127.0.0.1:9/classify", **FAST}
    closed = GuardrailSystem({"guardrails": {"checks": {**base, "toxicity": tox}}})
    verdict = await closed.check_input("hi")
    assert verdict.blocked and "toxicity" in (verdict.error or "")
    opened = GuardrailSystem({"guardrails": {"checks": {**base, "toxicity": {**tox, "fail_closed": False}}}})
    verdict = await opened.check_input("hi")
    assert verdict.passed and verdict.action is Action.WARN
    await closed.aclose()
    await opened.aclose()


def test_sync_wrapper_works_across_event_loops(scripted_service) -> None:
    Reply = scripted_service.Reply

    base = {
        "pii": {"enabled": False},
        "classification": {"enabled": False},
        "exfiltration": {"enabled": False},
    }
    system = GuardrailSystem(
        {"guardrails": {"checks": {**base, "toxicity": {"enabled": True, "url": scripted_service.url}}}}
    )
    scripted_service.default = Reply(body=[{"label": "toxic", "score": 0.99}])
    assert system.check_input_sync("a").blocked
    assert system.check_output_sync("b").blocked  # a second asyncio.run loop reuses nothing stale


async def test_a_reply_with_no_known_label_fails_closed(scripted_service) -> None:
    """Another model or a mis-set label_map gives labels the check does not know: no verdict, never "allow"
    (security review N16)."""
    Reply = scripted_service.Reply

    check = make_check(scripted_service.url)
    scripted_service.replies.append(
        Reply(body=[{"label": "LABEL_0", "score": 0.2}, {"label": "LABEL_1", "score": 0.8}])
    )
    with pytest.raises(CheckUnavailableError, match="LABEL_0, LABEL_1.*label_map"):
        await check.run("x", CTX)
    base = {"pii": {"enabled": False}, "classification": {"enabled": False}}
    tox = {"enabled": True, "url": scripted_service.url, **FAST}
    system = GuardrailSystem({"guardrails": {"checks": {**base, "toxicity": tox}}})
    scripted_service.default = Reply(body=[{"label": "LABEL_1", "score": 0.99}])
    verdict = await system.check_input("x")
    assert verdict.blocked and "label_map" in (verdict.error or "")  # the default is fail closed
    await system.aclose()
    await check.aclose()
