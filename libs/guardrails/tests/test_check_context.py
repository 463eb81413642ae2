"""GuardrailSystem.check_context(): the context stage (tool results, documents, e-mails, web pages)."""

from __future__ import annotations

import pytest

from stockade.guardrails import Action, ConfigError, GuardrailError, GuardrailSystem
from stockade.guardrails.checks.config import ContentChecksConfig, Stage
from stockade.guardrails.events import EventKind
from stockade.guardrails.testing import FakeClassifier, InMemoryRecorder

CHECKS_OFF = {name: {"enabled": False} for name in ("pii", "exfiltration", "classification")}
NO_CHECKS = {"guardrails": {"checks": CHECKS_OFF}}
RULES = {"smuggled": ("injection", Action.BLOCK), "alice": ("PERSON", Action.MASK)}


async def test_a_check_registered_for_context_sees_only_context_texts_with_their_source() -> None:
    context_only = FakeClassifier("ctx", RULES, stages=frozenset({Stage.CONTEXT}))
    input_only = FakeClassifier("in", RULES, stages=frozenset({Stage.INPUT}))
    system = GuardrailSystem(NO_CHECKS)
    system.add_check(context_only)
    system.add_check(input_only)

    assert (await system.check_input("user text")).passed
    assert (await system.check_output("reply text")).passed
    verdict = await system.check_context("a page with a smuggled order", source="web")

    assert context_only.seen == [(Stage.CONTEXT, "web", "a page with a smuggled order")]
    assert input_only.seen == [(Stage.INPUT, None, "user text")]
    assert verdict.stage == "context" and verdict.blocked
    assert verdict.error == "context blocked: ctx found injection"


async def test_context_masks_like_the_other_stages() -> None:
    system = GuardrailSystem(NO_CHECKS)
    system.add_check(FakeClassifier("ctx", RULES, stages=frozenset({Stage.CONTEXT})))
    verdict = await system.check_context("mail from alice", source="email")
    assert verdict.passed and verdict.action is Action.MASK and verdict.masked_text == "mail from <PERSON>"


async def test_events_record_the_context_stage_and_the_source() -> None:
    recorder = InMemoryRecorder()
    system = GuardrailSystem(NO_CHECKS, recorder=recorder)
    system.add_check(FakeClassifier("ctx", RULES, stages=frozenset({Stage.INPUT, Stage.CONTEXT})))
    await system.check_context("search hit", source="tool:search_web", session_id="s1")
    await system.check_input("question")
    context_event, input_event = recorder.of_kind(EventKind.CHECK)
    assert context_event.payload["stage"] == "context"
    assert context_event.payload["source"] == "tool:search_web" and context_event.session_id == "s1"
    assert input_event.payload["stage"] == "input" and "source" not in input_event.payload


async def test_a_failing_context_check_blocks_by_default_and_warns_when_fail_open() -> None:
    failing = FakeClassifier("down", error=ConnectionError("refused"), stages=frozenset({Stage.CONTEXT}))
    closed = GuardrailSystem(NO_CHECKS)
    closed.add_check(failing)
    verdict = await closed.check_context("doc", source="document")
    assert verdict.blocked and "refused" in (verdict.error or "")

    # fail_closed_context is its own setting: relaxing input or output does not relax context, and back
    relaxed_others = GuardrailSystem(NO_CHECKS, fail_closed_input=False, fail_closed_output=False)
    relaxed_others.add_check(failing)
    assert (await relaxed_others.check_context("doc", source="document")).blocked

    fail_open = GuardrailSystem(NO_CHECKS, fail_closed_context=False)
    fail_open.add_check(FakeClassifier("down", error=ConnectionError("refused"), stages=frozenset(Stage)))
    open_verdict = await fail_open.check_context("doc", source="document")
    assert open_verdict.passed and open_verdict.action is Action.WARN
    assert (await fail_open.check_input("doc")).blocked


def test_sync_wrapper_and_argument_checks() -> None:
    system = GuardrailSystem(NO_CHECKS)
    system.add_check(FakeClassifier("ctx", RULES, stages=frozenset({Stage.CONTEXT})))
    assert system.check_context_sync("smuggled", source=None).blocked
    with pytest.raises(TypeError, match="source must be str"):
        system.check_context_sync("text", source=42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="text must be str"):
        system.check_context_sync(b"text", source="web")  # type: ignore[arg-type]


async def test_sync_wrapper_inside_a_running_loop_names_the_async_call() -> None:
    with pytest.raises(GuardrailError, match="await check_context"):
        GuardrailSystem(NO_CHECKS).check_context_sync("text", source="web")


def test_default_stages_classification_on_context_pii_not_exfiltration_never() -> None:
    cfg = ContentChecksConfig()
    assert cfg.classification.stages == [Stage.INPUT, Stage.CONTEXT]
    assert Stage.CONTEXT not in cfg.pii.stages  # opt-in (README: latency on long documents)
    assert cfg.fail_closed_context is True
    with pytest.raises(ConfigError, match="output-only"):
        GuardrailSystem({"guardrails": {"checks": {**CHECKS_OFF, "exfiltration": {"stages": ["context"]}}}})
