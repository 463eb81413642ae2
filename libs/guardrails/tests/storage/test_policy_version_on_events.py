"""Every stored guardrail event names the platform policy version that made it (issue 31): set by
``GuardrailSystem.policy_ref`` (``from_platform`` sets it and swaps it on each activation), and a check that was
running when the system moved to another version keeps the version it ran on."""

import asyncio

from stockade.contracts import PolicyRef
from stockade.guardrails import Action, GuardrailSystem
from stockade.guardrails.testing import FakeClassifier

NO_BUILTIN_CHECKS = {name: {"enabled": False} for name in ("pii", "exfiltration", "classification")}


class Gated(FakeClassifier):
    """A check that holds until ``gate`` opens, saying when it started."""

    def __init__(self, gate: asyncio.Event) -> None:
        super().__init__("gated", {"refund": ("refund", Action.BLOCK)})
        self.gate, self.started = gate, asyncio.Event()

    async def run(self, text, ctx):
        self.started.set()
        await self.gate.wait()
        return await super().run(text, ctx)


def system() -> GuardrailSystem:
    return GuardrailSystem(
        {"guardrails": {"checks": NO_BUILTIN_CHECKS}},
        storage={"enabled": True, "backend_url": "http://127.0.0.1:9"},  # buffered only: never flushed here
    )


async def test_a_check_running_across_a_swap_keeps_the_version_it_ran_on():
    agent, gate = system(), asyncio.Event()
    check = Gated(gate)
    agent.add_check(check)
    agent.policy_ref = PolicyRef(name="support-bot", version=1)
    agent.begin_run("run-1")
    running = asyncio.create_task(agent.check_input("refund please"))
    await asyncio.wait_for(check.started.wait(), timeout=10)
    agent.adopt(agent.config, PolicyRef(name="support-bot", version=2))  # a publish arrives mid-check
    gate.set()
    assert (await asyncio.wait_for(running, timeout=10)).blocked
    await agent.check_input("refund again")  # the next check runs on version 2
    agent.before_tool_call("lookup_order", role="support")  # an agent hook's event: the current version
    events = agent.storage.buffered("run-1")
    assert [(e.name, e.policy_name, e.policy_version) for e in events] == [
        ("gated", "support-bot", "1"),
        ("gated", "support-bot", "2"),
        ("tool_authorization", "support-bot", "2"),
    ]


async def test_a_local_configuration_stamps_nothing():
    agent = system()
    agent.add_check(FakeClassifier("fake"))
    agent.begin_run("run-2")
    await agent.check_input("hello")
    assert [(e.policy_name, e.policy_version) for e in agent.storage.buffered("run-2")] == [(None, None)]
