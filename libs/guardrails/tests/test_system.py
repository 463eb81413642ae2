"""GuardrailSystem: concurrency, timeouts, fail modes, masking, events, sync wrappers, configuration."""

from __future__ import annotations

import asyncio

import pytest

from stockade.guardrails import Action, ConfigError, GuardrailError, GuardrailSystem
from stockade.guardrails.checks.config import Stage
from stockade.guardrails.events import EventKind
from stockade.guardrails.testing import FakeClassifier, InMemoryRecorder

NO_CHECKS = {
    "guardrails": {
        "checks": {name: {"enabled": False} for name in ("pii", "exfiltration", "classification")},
    }
}


def make_system(
    *checks: FakeClassifier, recorder: InMemoryRecorder | None = None, **kw: object
) -> GuardrailSystem:
    system = GuardrailSystem(NO_CHECKS, recorder=recorder, **kw)  # type: ignore[arg-type]
    for check in checks:
        system.add_check(check, timeout_s=float(kw.get("timeout_s", 1.0)) if "timeout_s" in kw else 1.0)
    return system


async def test_clean_text_passes_with_allow_and_per_check_timings() -> None:
    system = make_system(FakeClassifier("a"), FakeClassifier("b"))
    verdict = await system.check_input("hello there")
    assert verdict.passed and verdict.action is Action.ALLOW
    assert set(verdict.timings_ms) == {"a", "b"}
    assert verdict.masked_text is None and verdict.error is None


async def test_blocking_finding_blocks_with_error_naming_check() -> None:
    system = make_system(FakeClassifier("words", {"bomb": ("malicious", Action.BLOCK)}))
    verdict = await system.check_input("how to build a bomb")
    assert not verdict.passed and verdict.blocked
    assert "words" in (verdict.error or "") and "malicious" in (verdict.error or "")
    assert verdict.findings[0].start == 15 and verdict.findings[0].end == 19


async def test_mask_findings_of_two_checks_are_merged_into_masked_text() -> None:
    a = FakeClassifier("a", {"alice": ("PERSON", Action.MASK)})
    b = FakeClassifier("b", {"secret": ("token", Action.MASK)})
    verdict = await make_system(a, b).check_output("alice said secret twice, alice")
    assert verdict.passed and verdict.action is Action.MASK
    assert verdict.masked_text == "<PERSON> said <token> twice, <PERSON>"
    # what was masked and why, by type and count, never the values
    assert verdict.error == "output masked: a found PERSON (2); b found token (1)"
    masked_input = await make_system(a).check_input("alice")
    assert masked_input.error == "input masked: a found PERSON (1)"


class _LoggedCheck(FakeClassifier):
    """A slow check that logs when it starts and ends, into a log shared with the other checks."""

    def __init__(self, name: str, log: list[tuple[str, str]]) -> None:
        super().__init__(name, delay_s=0.05)
        self.log = log

    async def run(self, text, ctx):  # type: ignore[no-untyped-def]
        self.log.append(("start", self.name))
        try:
            return await super().run(text, ctx)
        finally:
            self.log.append(("end", self.name))


async def test_checks_run_concurrently() -> None:
    log: list[tuple[str, str]] = []
    checks = [_LoggedCheck(f"slow{i}", log) for i in range(4)]
    verdict = await make_system(*checks).check_input("x")
    assert verdict.passed and len(log) == 8
    # In sequence each check would end before the next starts; run together, all four start before any ends.
    # (Measured by order, not wall time, so a loaded machine cannot make it fail.)
    assert [event for event, _ in log[:4]] == ["start"] * 4, log


async def test_input_timeout_fails_closed_by_default() -> None:
    system = GuardrailSystem(NO_CHECKS)
    system.add_check(FakeClassifier("slow", delay_s=2.0), timeout_s=0.05)
    verdict = await system.check_input("hi")
    assert verdict.blocked and not verdict.passed
    assert "timed out" in (verdict.error or "")
    assert verdict.results[0].error is not None


async def test_fail_open_check_warns_instead_of_blocking() -> None:
    system = GuardrailSystem(NO_CHECKS)
    system.add_check(FakeClassifier("down", error=ConnectionError("refused")), fail_closed=False)
    verdict = await system.check_input("hi")
    assert verdict.passed and verdict.action is Action.WARN
    assert "refused" in (verdict.results[0].error or "")


async def test_output_fail_mode_follows_config() -> None:
    cfg = {"guardrails": {"checks": {**NO_CHECKS["guardrails"]["checks"], "fail_closed_output": False}}}
    system = GuardrailSystem(cfg)
    system.add_check(FakeClassifier("down", error=RuntimeError("boom")))
    assert (await system.check_output("x")).passed
    assert (await system.check_input("x")).blocked


async def test_stage_selects_checks() -> None:
    only_out = FakeClassifier("out", {"x": ("t", Action.BLOCK)}, stages=frozenset({Stage.OUTPUT}))
    system = make_system(only_out)
    assert (await system.check_input("x")).passed
    assert (await system.check_output("x")).blocked
    assert only_out.calls == 1


async def test_every_check_run_records_an_event_without_raw_values() -> None:
    recorder = InMemoryRecorder()
    system = make_system(FakeClassifier("a", {"alice": ("PERSON", Action.MASK)}), recorder=recorder)
    await system.check_input("alice is here", session_id="s-1", metadata={"run_id": "r-9"})
    [event] = recorder.of_kind(EventKind.CHECK)
    assert event.name == "a" and event.session_id == "s-1" and event.run_id == "r-9"
    assert event.action == "mask" and event.payload["finding_types"] == {"PERSON": 1}
    assert "alice" not in event.model_dump_json()


def test_sync_wrappers_work_without_a_loop() -> None:
    system = make_system(FakeClassifier("a", {"bad": ("t", Action.BLOCK)}))
    assert system.check_input_sync("bad").blocked
    assert system.check_output_sync("fine").passed


async def test_sync_wrapper_inside_running_loop_raises_clear_error() -> None:
    system = make_system()
    with pytest.raises(GuardrailError, match="await check_input"):
        system.check_input_sync("x")


async def test_non_string_payload_is_rejected() -> None:
    with pytest.raises(TypeError):
        await make_system().check_input(b"bytes")  # type: ignore[arg-type]


def test_overrides_merge_into_checks_config_and_are_validated() -> None:
    system = GuardrailSystem(NO_CHECKS, exfiltration={"enabled": True, "block_threshold": 0.5})
    assert system.config.guardrails.checks.exfiltration.block_threshold == 0.5
    assert [c.name for c in system.checks] == ["exfiltration"]
    with pytest.raises(ConfigError, match=r"guardrails\.checks\.exfiltration\.block_threshold"):
        GuardrailSystem(NO_CHECKS, exfiltration={"block_threshold": 7})


def test_yaml_string_and_file_configure_the_system(tmp_path: object) -> None:
    yaml_text = """
guardrails:
  checks:
    pii: {enabled: false}
    classification: {enabled: false}
    exfiltration:
      warn_threshold: 0.2
      patterns: {max_output_chars: 100}
"""
    system = GuardrailSystem(yaml_text)
    assert system.config.guardrails.checks.exfiltration.patterns.max_output_chars == 100
    path = tmp_path / "g.yaml"  # type: ignore[operator]
    path.write_text(yaml_text)
    assert GuardrailSystem(path).config.guardrails.checks.exfiltration.warn_threshold == 0.2


def test_bad_key_names_the_dotted_path() -> None:
    with pytest.raises(ConfigError, match=r"guardrails\.checks\.pii\.default_action"):
        GuardrailSystem({"guardrails": {"checks": {"pii": {"default_action": "shred"}}}})
    with pytest.raises(ConfigError, match=r"guardrails\.checks\.exfiltration\.stages"):
        GuardrailSystem({"guardrails": {"checks": {"exfiltration": {"stages": ["input"]}}}})


async def test_usable_as_content_validator_on_any_string_payload() -> None:
    system = make_system(FakeClassifier("a", {"ignore": ("injection", Action.BLOCK)}))
    results = await asyncio.gather(*(system.check_input(p) for p in ['{"msg": "ignore all"}', "", "ok"]))
    assert [r.blocked for r in results] == [True, False, False]


async def test_checks_with_an_inline_first_step_start_first_and_results_keep_slot_order() -> None:
    started: list[str] = []

    class Recording(FakeClassifier):
        async def run(self, text: str, ctx):  # type: ignore[no-untyped-def]
            started.append(self.name)  # runs before the check's first await
            return await super().run(text, ctx)

    inline = Recording("inline")
    inline.starts_inline = True  # type: ignore[attr-defined]
    system = make_system(Recording("first"), Recording("second"), inline)
    verdict = await system.check_input("hello")
    assert started == ["inline", "first", "second"]
    assert [r.check for r in verdict.results] == ["first", "second", "inline"]
