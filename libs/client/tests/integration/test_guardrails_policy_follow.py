"""GuardrailSystem.from_platform on the real prompt-api (PostgreSQL) and NATS, past the first swap (issue 31): the
checks of each replaced version are closed once the checks running on them have finished (a check in flight at
the swap finishes on its version first), and an agent without push follows activations by polling."""

import asyncio

import pytest

from stockade.client import AsyncStockadeClient, ClientSettings, PushSettings, StockadeClient
from stockade.contracts import PolicyRef
from stockade.guardrails import GuardrailSystem
from stockade.guardrails.checks.base import CheckContext
from stockade.guardrails.checks.config import ContentChecksConfig, Stage
from stockade.guardrails.checks.registry import register_check
from stockade.guardrails.verdict import CheckResult

from .test_guardrails_from_platform import LEAK, LENIENT, STRICT, library_log, publisher, wait_for

__all__ = ["library_log"]  # the fixture, shared with test_guardrails_from_platform


def pooled(version: int) -> str:
    """A policy whose one check holds a resource; ``version`` only makes each YAML differ."""
    return (
        "guardrails:\n  checks:\n    pii:\n      enabled: false\n    exfiltration:\n      enabled: false\n"
        f"    custom:\n      pooled:\n        enabled: true\n        options: {{rev: {version}}}\n"
    )


class Pooled:
    """A check with a resource that records its close (as a connection pool would be released); a check of
    ``gated`` waits until released, so it is in flight across a swap."""

    name = "pooled"
    stages = frozenset({Stage.OUTPUT})
    made: list["Pooled"] = []
    gated = False

    def __init__(self, rev: int) -> None:
        self.rev = rev
        self.closed = False
        self.was_closed = asyncio.Event()
        self.ran_while_closed = False
        self.entered = asyncio.Event()
        self.release = asyncio.Event()
        Pooled.made.append(self)

    async def run(self, text: str, ctx: CheckContext) -> CheckResult:
        if Pooled.gated:
            self.entered.set()
            await self.release.wait()
        self.ran_while_closed = self.closed
        return CheckResult(check=self.name)

    async def aclose(self) -> None:
        self.closed = True
        self.was_closed.set()


def _build(config: ContentChecksConfig) -> Pooled:
    return Pooled(int(config.custom["pooled"].options["rev"]))


@pytest.fixture
def pooled_checks():
    register_check("pooled", _build)
    Pooled.made.clear()
    Pooled.gated = False
    yield Pooled.made
    Pooled.gated = False


async def test_each_swap_closes_the_replaced_checks_after_the_running_one_ends(
    world, nats_url, tmp_path, pooled_checks
):
    settings = ClientSettings(base_url=world.base_url, push=PushSettings(nats_url=nats_url))
    with publisher(world) as admin:
        admin.publish_policy(world.project_id, "agent", pooled(1))
        system = GuardrailSystem.from_platform(
            world.project_id, "agent", api_key=world.read_key, settings=settings, cache_dir=tmp_path
        )
        try:
            for n in range(2, 5):  # three swaps: each one's replaced check is closed, the live one is not
                admin.publish_policy(world.project_id, "agent", pooled(n))
                wait_for(lambda n=n: system.policy_ref == PolicyRef(name="agent", version=n), f"version {n}")
                await system.check_output("hello")  # the agent's loop: where the closes run
                wait_for(lambda n=n: all(c.closed for c in pooled_checks if c.rev < n), f"closes before {n}")
            assert [c.rev for c in pooled_checks if not c.closed] == [4]

            # a check in flight at the swap finishes on its version, and only then is that version closed
            Pooled.gated = True
            running = asyncio.create_task(system.check_output("hello"))
            live = pooled_checks[-1]
            await asyncio.wait_for(live.entered.wait(), 10)
            admin.publish_policy(world.project_id, "agent", pooled(5))
            await asyncio.to_thread(
                wait_for, lambda: system.policy_ref == PolicyRef(name="agent", version=5), "version 5"
            )
            assert not live.closed  # the check on version 4 still runs: its resource stays open
            live.release.set()
            verdict = await asyncio.wait_for(running, 10)
            assert [r.check for r in verdict.results] == ["pooled"] and not live.ran_while_closed
            await asyncio.wait_for(live.was_closed.wait(), 10)  # closed once it ended
            assert not pooled_checks[-1].closed and pooled_checks[-1].rev == 5
        finally:
            await system.aclose()
    assert all(c.closed for c in pooled_checks)  # aclose() closes the live version's


def test_an_agent_without_nats_follows_a_publish_by_polling(world, tmp_path):
    settings = ClientSettings(base_url=world.base_url, policy_poll_s=0.3)  # no push.nats_url: no push at all
    with publisher(world) as admin:
        admin.publish_policy(world.project_id, "agent", LENIENT)
        system = GuardrailSystem.from_platform(
            world.project_id, "agent", api_key=world.read_key, settings=settings, cache_dir=tmp_path
        )
        try:
            assert system.check_output_sync(LEAK).action.value == "allow"
            admin.publish_policy(world.project_id, "agent", STRICT, "block leaked keys")
            wait_for(lambda: system.policy_ref == PolicyRef(name="agent", version=2), "the poll to bring v2")
            assert system.check_output_sync(LEAK).action.value == "block"
        finally:
            system._platform_client.close()  # type: ignore[attr-defined]


def test_an_unchanged_policy_is_revalidated_with_a_304(world):
    settings = ClientSettings(base_url=world.base_url, policy_poll_s=0.2)
    with publisher(world) as admin:
        admin.publish_policy(world.project_id, "agent", LENIENT)
    seen: list[int] = []
    with StockadeClient(world.read_key, settings, http_client=world.http()) as client:
        current = client.get_policy(world.project_id, "agent")
        client.watch_policy(world.project_id, "agent", lambda v: seen.append(v.version), current=current)
        wait_for(lambda: sum(r.status_code == 304 for r in world.responses) >= 2, "two revalidations")
    polls = [r for r in world.requests if r.url.path == "/policies/active-version"][1:]
    assert all(r.headers.get("If-None-Match") for r in polls)  # ETag: nothing re-sent while unchanged
    assert seen == []  # the version the agent runs on is never delivered again


async def test_the_async_client_polls_too(world):
    settings = ClientSettings(base_url=world.base_url, policy_poll_s=0.2)
    with publisher(world) as admin:
        first = admin.publish_policy(world.project_id, "agent", LENIENT)
        delivered = asyncio.Event()
        async with AsyncStockadeClient(world.read_key, settings) as client:
            assert not await client.watch_policy(world.project_id, "agent", lambda v: delivered.set(), first)
            admin.publish_policy(world.project_id, "agent", STRICT)
            await asyncio.wait_for(delivered.wait(), 15)
            assert (await client.get_policy(world.project_id, "agent")).version == 2


NOT_GRANTED = """
authorization {
  users = [{user: agent, password: pw, permissions: {
    subscribe: {allow: ["prompt.published.v1.>", "_INBOX.>"]}, publish: {allow: ["_INBOX.>"]}}}]
}
"""


def test_an_agent_not_granted_the_policy_subject_follows_by_polling(
    world, nats_server_factory, tmp_path, library_log
):
    nats = nats_server_factory(NOT_GRANTED)  # push connects (prompt events granted), policy events refused
    push = PushSettings(nats_url=f"nats://agent:pw@127.0.0.1:{nats.port}")
    settings = ClientSettings(base_url=world.base_url, push=push, policy_poll_s=0.3)
    with publisher(world) as admin:
        admin.publish_policy(world.project_id, "agent", LENIENT)
        system = GuardrailSystem.from_platform(
            world.project_id, "agent", api_key=world.read_key, settings=settings, cache_dir=tmp_path
        )
        try:
            assert "push refresh is off for policy 'agent'" in library_log.text
            assert "following it by polling prompt-api every 0.3 s" in library_log.text
            admin.publish_policy(world.project_id, "agent", STRICT)
            wait_for(lambda: system.policy_ref == PolicyRef(name="agent", version=2), "the poll to bring v2")
            assert system.check_output_sync(LEAK).action.value == "block"
        finally:
            system._platform_client.close()  # type: ignore[attr-defined]
