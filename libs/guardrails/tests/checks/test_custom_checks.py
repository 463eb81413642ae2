"""A check from another package, added by configuration alone (``guardrails.checks.custom``) or by
``register_check``: it runs beside the built-in ones, its settings (stages, timeout, fail mode, options) apply,
its ``warmup`` and ``aclose`` are called, and a wrong factory is a configuration error that says what to fix."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from stockade.guardrails import Action, ConfigError, GuardrailSystem, register_check
from stockade.guardrails.checks import registry
from stockade.guardrails.checks.base import CheckContext
from stockade.guardrails.checks.config import ContentChecksConfig
from stockade.guardrails.verdict import CheckResult, Finding

# A third-party package, as a user would ship it: nothing in it is imported from the test.
THIRD_PARTY = """
import asyncio

from stockade.guardrails.verdict import Action, CheckResult, Finding

CALLS = []


class BannedWords:
    def __init__(self, words, stages, delay_s):
        self.name = "banned_words"
        self.stages = frozenset(stages)
        self.words = words
        self.delay_s = delay_s

    async def warmup(self):
        CALLS.append("warmup")

    async def aclose(self):
        CALLS.append("aclose")

    async def run(self, text, ctx):
        await asyncio.sleep(self.delay_s)
        low = text.lower()
        findings = [
            Finding(check=self.name, type="banned_word", start=low.index(w), end=low.index(w) + len(w),
                    action=Action.BLOCK)
            for w in self.words if w in low
        ]
        return CheckResult(check=self.name, action=Action.strongest([f.action for f in findings]),
                           findings=findings)


def build(config):
    settings = config.custom["banned_words"]
    return BannedWords(settings.options["words"], settings.stages, settings.options.get("delay_s", 0.0))


def not_a_check(config):
    return object()
"""

OFF = {name: {"enabled": False} for name in ("pii", "exfiltration", "classification")}


@pytest.fixture
def third_party(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    package = tmp_path / "acme_rails"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "checks.py").write_text(textwrap.dedent(THIRD_PARTY))
    monkeypatch.syspath_prepend(str(tmp_path))
    import acme_rails.checks

    yield acme_rails.checks
    sys.modules.pop("acme_rails.checks", None)
    sys.modules.pop("acme_rails", None)


def custom(**settings: object) -> dict[str, object]:
    section = {"factory": "acme_rails.checks:build", "options": {"words": ["wire the money"]}}
    section.update(settings)
    return {"guardrails": {"checks": {**OFF, "custom": {"banned_words": section}}}}


async def test_a_check_from_configuration_blocks_and_reports_like_a_built_in(third_party: object) -> None:
    system = GuardrailSystem(custom())
    verdict = await system.check_input("Please wire the money to this account today.")
    assert verdict.action is Action.BLOCK
    [result] = verdict.results
    assert result.check == "banned_words"
    assert [f.type for f in result.findings] == ["banned_word"]
    assert (await system.check_input("What is the weather in Lyon?")).action is Action.ALLOW


async def test_a_config_file_is_enough(third_party: object, tmp_path: Path) -> None:
    path = tmp_path / "guardrails.yaml"
    path.write_text(
        textwrap.dedent(
            """
            guardrails:
              checks:
                pii: {enabled: false}
                exfiltration: {enabled: false}
                classification: {enabled: false}
                custom:
                  banned_words:
                    factory: acme_rails.checks:build
                    stages: [output]
                    options: {words: [internal only]}
            """
        )
    )
    system = GuardrailSystem(path)
    text = "This memo is INTERNAL ONLY."
    assert (await system.check_input(text)).action is Action.ALLOW  # configured for output only
    assert (await system.check_output(text)).action is Action.BLOCK


async def test_its_timeout_and_fail_mode_apply(third_party: object) -> None:
    closed = GuardrailSystem(custom(timeout_s=0.05, options={"words": ["x"], "delay_s": 1.0}))
    verdict = await closed.check_input("hello")
    assert verdict.action is Action.BLOCK and "banned_words timed out" in (verdict.error or "")
    opened = GuardrailSystem(
        custom(timeout_s=0.05, fail_closed=False, options={"words": ["x"], "delay_s": 1.0})
    )
    assert (await opened.check_input("hello")).action is Action.WARN


async def test_warmup_and_aclose_are_called(third_party: object) -> None:
    calls: list[str] = third_party.CALLS  # type: ignore[attr-defined]
    system = GuardrailSystem(custom())
    await system.warmup()
    await system.check_input("hi")
    await system.aclose()
    assert calls == ["warmup", "aclose"]  # warmed once, not again on the first run


async def test_disabled_custom_check_is_not_built(third_party: object) -> None:
    system = GuardrailSystem(custom(enabled=False, factory="acme_rails.checks:missing"))
    assert (await system.check_input("wire the money")).action is Action.ALLOW


def test_a_wrong_factory_says_what_to_fix(third_party: object) -> None:
    with pytest.raises(
        ConfigError, match=r"custom\.banned_words\.factory: cannot load 'acme_rails.checks:nope'"
    ):
        GuardrailSystem(custom(factory="acme_rails.checks:nope"))
    with pytest.raises(ConfigError, match=r"cannot load 'no_such_pkg.mod:build'"):
        GuardrailSystem(custom(factory="no_such_pkg.mod:build"))
    with pytest.raises(ConfigError, match="returned object, not a check"):
        GuardrailSystem(custom(factory="acme_rails.checks:not_a_check"))
    with pytest.raises(ConfigError, match="package.module:callable"):
        GuardrailSystem(custom(factory="acme_rails.checks.build"))


def test_a_built_in_name_cannot_be_taken() -> None:
    with pytest.raises(ConfigError, match="pii is a built-in check"):
        GuardrailSystem({"guardrails": {"checks": {"custom": {"pii": {"factory": "a.b:c"}}}}})
    with pytest.raises(ConfigError, match="built-in"):
        register_check("classification", lambda config: None)  # type: ignore[arg-type,return-value]


class Shouting:
    name = "shouting"
    stages = frozenset({"input"})

    async def run(self, text: str, ctx: CheckContext) -> CheckResult:
        loud = text.isupper()
        findings = [Finding(check=self.name, type="shouting", action=Action.WARN)] if loud else []
        return CheckResult(check=self.name, action=Action.WARN if loud else Action.ALLOW, findings=findings)


async def test_register_check_then_enable_it_in_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "_CUSTOM", {})
    config = {"guardrails": {"checks": {**OFF, "custom": {"shouting": {"stages": ["input"]}}}}}
    with pytest.raises(ConfigError, match=r"register_check\('shouting', factory\)"):
        GuardrailSystem(config)

    def build(checks: ContentChecksConfig) -> Shouting:
        return Shouting()

    register_check("shouting", build)
    system = GuardrailSystem(config)
    assert (await system.check_input("STOP NOW")).action is Action.WARN
    assert (await system.check_input("stop now")).action is Action.ALLOW


def test_a_factory_that_cannot_load_is_refused_before_any_model_loads(
    third_party: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pushed policy whose custom factory is missing is refused at once, not after the built-in checks'
    models (PII, classifier: seconds each) were loaded for nothing."""
    built: list[str] = []
    monkeypatch.setattr(registry, "build_check", lambda name, config: built.append(name))
    config = {"guardrails": {"checks": {"custom": {"broken": {"factory": "no_such_pkg.mod:build"}}}}}
    with pytest.raises(ConfigError, match=r"custom\.broken\.factory: cannot load"):
        GuardrailSystem(config)
    assert built == []
