"""GuardrailSystem.adopt, what from_platform swaps with: a check already running finishes wholly on the version it
started with, the next one runs wholly on the new version, and a version that does not build changes nothing."""

import asyncio
import logging
import threading

import pytest

from stockade.contracts import PolicyRef
from stockade.guardrails import ConfigError, GuardrailSystem
from stockade.guardrails.checks.base import CheckContext
from stockade.guardrails.checks.config import Stage
from stockade.guardrails.checks.registry import CheckSlot, register_check
from stockade.guardrails.config import GuardrailsConfig
from stockade.guardrails.live import Live, Retirements, entered
from stockade.guardrails.verdict import CheckResult

NO_PII = {"pii": {"enabled": False}}
STRICT = {
    "guardrails": {
        "checks": {**NO_PII, "exfiltration": {"enabled": True, "secrets": {"detect_secrets": False}}}
    }
}
LENIENT = {"guardrails": {"checks": {**NO_PII, "exfiltration": {"enabled": False}}}}
LEAK = "the key is AKIAQ3EGRT7PLMZK5VXC"


class Gate:
    """A check that waits until released: it holds a run open across a swap."""

    name = "gate"
    stages = frozenset({Stage.OUTPUT})

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def run(self, text: str, ctx: CheckContext) -> CheckResult:
        self.entered.set()
        await self.release.wait()
        return CheckResult(check=self.name)


async def test_a_running_check_finishes_on_its_version_and_the_next_runs_on_the_new_one():
    system = GuardrailSystem(STRICT)
    gate = Gate()
    system.add_check(gate, timeout_s=30)
    running = asyncio.create_task(system.check_output(LEAK))
    await asyncio.wait_for(gate.entered.wait(), 10)
    system.adopt(GuardrailsConfig.from_dict(LENIENT), PolicyRef(name="p", version=2))
    gate.release.set()
    started = await running
    assert started.action.value == "block"  # started on the strict version: its checks all ran
    assert {r.check for r in started.results} == {"gate", "exfiltration"}
    assert system.policy_ref == PolicyRef(name="p", version=2)
    after = await system.check_output(LEAK)
    assert after.action.value == "allow"  # the lenient version, and the added check is still there
    assert {r.check for r in after.results} == {"gate"}


async def test_a_version_that_does_not_build_changes_nothing():
    system = GuardrailSystem(STRICT)
    system.policy_ref = PolicyRef(name="p", version=1)
    broken = {
        "guardrails": {"checks": {"custom": {"x": {"enabled": True, "factory": "stockade_no_such:make"}}}}
    }
    with pytest.raises(ConfigError):
        system.adopt(GuardrailsConfig.from_dict(broken), PolicyRef(name="p", version=2))
    assert system.policy_ref == PolicyRef(name="p", version=1)
    assert system.config.guardrails.checks.exfiltration.enabled
    assert (await system.check_output(LEAK)).action.value == "block"


class Leaky:
    """A check whose resource fails to close (after the others' closes are under way)."""

    name = "leaky"
    stages = frozenset({Stage.OUTPUT})

    def __init__(self, fails: bool) -> None:
        self.fails, self.closed = fails, asyncio.Event()

    async def run(self, text: str, ctx: CheckContext) -> CheckResult:
        return CheckResult(check=self.name)

    async def aclose(self) -> None:
        self.closed.set()
        if self.fails:
            raise OSError("pool already broken")


async def test_a_replaced_check_that_fails_to_close_is_logged_and_the_others_still_close():
    failing, fine = Leaky(fails=True), Leaky(fails=False)
    register_check("leaky_a", lambda cfg: _named(failing, "leaky_a"))
    register_check("leaky_b", lambda cfg: _named(fine, "leaky_b"))
    two = {"guardrails": {"checks": {**NO_PII, "custom": {"leaky_a": {}, "leaky_b": {}}}}}
    system, lines = GuardrailSystem(two), Lines()
    logger = logging.getLogger("stockade.guardrails.platform")
    logger.addHandler(lines)
    try:
        await system.check_output("hello")  # checks ran on this loop: closes run here too
        system.adopt(GuardrailsConfig.from_dict(LENIENT), PolicyRef(name="p", version=2))
        await asyncio.wait_for(asyncio.gather(failing.closed.wait(), fine.closed.wait()), 10)
        await asyncio.sleep(0)  # the close task logs after the failing aclose() returns
        assert any("closing check 'leaky_a' of a replaced version failed" in line for line in lines.lines)
        assert (await system.check_output(LEAK)).action.value == "allow"  # the new version runs
    finally:
        logger.removeHandler(lines)


def _named(check: Leaky, name: str) -> Leaky:
    check.name = name
    return check


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


async def test_a_check_that_never_ends_holds_its_version_open_only_for_the_bounded_wait():
    hung = Leaky(fails=False)
    live = Live(GuardrailsConfig.from_dict(LENIENT), [CheckSlot(hung, 5.0)])
    retired, lines = Retirements(), Lines()
    logger = logging.getLogger("stockade.guardrails.platform")
    logger.addHandler(lines)
    try:
        assert live.runs.enter()  # a check in flight that never ends
        retired.retire(live, kept=[], after_s=0.2)
        assert not hung.closed.is_set()
        await asyncio.wait_for(asyncio.to_thread(_wait_closed, hung), 10)  # closed by the bounded wait
        assert any("still ran on it after 0.2 s" in line for line in lines.lines)
        assert not live.runs.enter()  # and no new check starts on it: they read the new version
        assert entered(iter([live, Live(live.config, [])]).__next__) is not live
    finally:
        logger.removeHandler(lines)


def _wait_closed(check: Leaky) -> None:
    while not check.closed.is_set():
        threading.Event().wait(0.02)
