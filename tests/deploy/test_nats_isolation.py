"""Agents of one deployment on the shipped deploy/nats files: one agent cannot read, write, delete, pre-create or
crowd out another agent's rate-limit counters (review finding N4).

Each agent keeps its counters in its own bucket (``stockade.contracts.subjects.rate_limit_bucket``), which only
its NATS user may reach, and the AGENTS account caps every bucket's size, so filling one's own bucket blocks
only oneself. The server is the ``deployment`` fixture of conftest.py (the real files, a real nats-server).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from typing import Any

import pytest
from nats.aio.client import Client
from nats.js.api import KeyValueConfig
from nats.js.errors import BadRequestError

from stockade.contracts import subjects
from stockade.contracts.limits import AGENT_RATE_LIMIT_MAX_BYTES
from stockade.contracts.nats_sync import sync_with_server
from stockade.guardrails.policies.config import RateLimitsConfig
from stockade.guardrails.policies.counters.nats_kv import counter_key
from stockade.guardrails.policies.rate_limits import RateLimiter

pytestmark = pytest.mark.nats


class Agent:
    """An agent's raw connection with its production grants, and the server errors it received."""

    def __init__(self, name: str, nc: Client, errors: list[str]) -> None:
        self.name, self.nc, self.errors = name, nc, errors

    def denied(self, subject: str) -> bool:
        return any(
            "permissions violation" in e.lower() and f'"{subject.lower()}"' in e.lower() for e in self.errors
        )


@pytest.fixture
async def agents(deployment: Any) -> AsyncIterator[dict[str, Agent]]:
    out: dict[str, Agent] = {}
    for name in ("planner", "executor"):
        errors: list[str] = []
        nc = await deployment.connect(name, errors, inbox_prefix=subjects.agent_reply_prefix(name))
        out[name] = Agent(name, nc, errors)
    yield out
    for agent in out.values():
        await agent.nc.close()


def limiter(deployment: Any, agent: str) -> RateLimiter:
    host = deployment.url.removeprefix("nats://")
    url = f"nats://{agent}:{deployment.passwords[agent]}@{host}"
    config = RateLimitsConfig.model_validate(
        {
            "requests_per_session": 3,
            "backend": "nats",
            "nats": {"url": url, "agent_id": agent, "timeout_seconds": 5},
        }
    )
    return RateLimiter(config)


async def test_an_agent_cannot_read_write_delete_or_precreate_another_agents_counters(
    deployment: Any, agents: dict[str, Agent]
) -> None:
    session = "session-" + os.urandom(4).hex()
    victim = limiter(deployment, "executor")
    try:
        assert (await victim.before_request(session)).passed  # the executor's counter: 1 of 3
        theirs = subjects.rate_limit_bucket("executor")
        stream, key = f"KV_{theirs}", f"$KV.{theirs}.{counter_key('requests:' + session)}"
        planner = agents["planner"]
        js = planner.nc.jetstream(timeout=1)
        with pytest.raises(Exception):  # bind (stream info): refused, never answered
            await js.key_value(theirs)
        with pytest.raises(Exception):  # read by sequence
            await js.get_msg(stream, 1)
        with pytest.raises(Exception):  # read by subject, the direct way
            await planner.nc.request(f"$JS.API.DIRECT.GET.{stream}.{key}", b"", timeout=1)
        await planner.nc.publish(key, b"0")  # reset
        await planner.nc.publish(key, b"999")  # inflate
        await planner.nc.publish(key, b"", headers={"KV-Operation": "DEL"})  # delete
        await planner.nc.publish(key, b"", headers={"KV-Operation": "PURGE", "Nats-Rollup": "sub"})
        with pytest.raises(Exception):
            await js.purge_stream(stream)
        with pytest.raises(Exception):  # pre-create a bucket of an agent that has not started yet (ttl 1 s)
            await js.create_key_value(
                KeyValueConfig(bucket=subjects.rate_limit_bucket("intern"), ttl=1, max_bytes=1024)
            )
        await sync_with_server(planner.nc, 5)
        for subject in (
            f"$JS.API.STREAM.INFO.{stream}",
            f"$JS.API.STREAM.MSG.GET.{stream}",
            f"$JS.API.DIRECT.GET.{stream}.{key}",
            key,
            f"$JS.API.STREAM.PURGE.{stream}",
            f"$JS.API.STREAM.CREATE.KV_{subjects.rate_limit_bucket('intern')}",
        ):
            assert planner.denied(subject), (subject, planner.errors)
        # The executor's counter is untouched: two more requests pass, the fourth is refused.
        verdicts = [(await victim.before_request(session)).passed for _ in range(3)]
        assert verdicts == [True, True, False]
        assert await victim.store.get("requests:" + session) == 3
    finally:
        await victim.store.close()  # type: ignore[attr-defined]


async def test_an_agent_that_fills_or_oversizes_its_bucket_blocks_only_itself(
    deployment: Any, agents: dict[str, Agent]
) -> None:
    # Its own bucket larger than the account's per-stream cap, or with no byte limit: the server refuses it
    # (10122: exceeds the account's max stream bytes; 10113: the account requires max bytes).
    errors: list[str] = []
    intern = await deployment.connect("intern", errors, inbox_prefix=subjects.agent_reply_prefix("intern"))
    try:
        intern_js = intern.jetstream(timeout=5)
        bucket = subjects.rate_limit_bucket("intern")
        for max_bytes, code in ((AGENT_RATE_LIMIT_MAX_BYTES * 16, 10122), (-1, 10113)):
            with pytest.raises(BadRequestError) as refused:
                await intern_js.create_key_value(KeyValueConfig(bucket=bucket, max_bytes=max_bytes))
            assert refused.value.err_code == code
    finally:
        await intern.close()
    planner = agents["planner"]
    js = planner.nc.jetstream(timeout=5)
    own = subjects.rate_limit_bucket("planner")
    planner_limiter = limiter(deployment, "planner")
    executor_limiter = limiter(deployment, "executor")
    try:
        assert (await planner_limiter.before_request("p-1")).passed  # creates the planner's bucket
        kv = await js.key_value(own)
        info = await js.stream_info(f"KV_{own}")
        assert info.config.max_bytes == AGENT_RATE_LIMIT_MAX_BYTES
        # Fill the planner's own bucket to the brim (about 32 x 1 MB values): its further writes are refused.
        chunk = b"x" * (1024 * 1000)
        refused = False
        for i in range(40):
            try:
                await kv.put(f"fill{i}", chunk)
            except Exception:
                refused = True
                break
        assert refused, "the bucket took more than its byte limit"
        # The executor's checks are unaffected.
        verdicts = [(await executor_limiter.before_request("e-1")).passed for _ in range(4)]
        assert verdicts == [True, True, True, False]
    finally:
        await planner_limiter.store.close()  # type: ignore[attr-defined]
        await executor_limiter.store.close()  # type: ignore[attr-defined]


async def test_an_agent_receives_only_its_projects_prompt_events(
    deployment: Any, agents: dict[str, Agent]
) -> None:
    """prompt.published.v1.<project>: the planner works for p1, the executor for p2 (conftest.AGENT_PROJECTS)."""
    from stockade.client import ClientSettings, PushSettings
    from stockade.client.core import ClientCore
    from stockade.client.errors import ServerUnavailableError
    from stockade.client.push import PromptPushSubscription
    from stockade.contracts import PromptPublished

    planner, executor = agents["planner"], agents["executor"]
    got: dict[str, list[str]] = {"planner": [], "executor": []}

    def keep(name: str) -> Any:
        async def cb(msg: Any) -> None:
            got[name].append(msg.subject)

        return cb

    await planner.nc.subscribe(subjects.prompt_published("p1"), cb=keep("planner"))
    await executor.nc.subscribe(subjects.prompt_published("p2"), cb=keep("executor"))
    for attempt in (
        subjects.prompt_published("p2"),
        subjects.PROMPT_PUBLISHED_WILDCARD,
        "prompt.published.>",
        ">",
    ):
        await planner.nc.subscribe(attempt, cb=keep("planner"))
    await sync_with_server(planner.nc, 5)
    await sync_with_server(executor.nc, 5)
    for attempt in (
        subjects.prompt_published("p2"),
        subjects.PROMPT_PUBLISHED_WILDCARD,
        "prompt.published.>",
        ">",
    ):
        assert planner.denied(attempt), (attempt, planner.errors)
    errors: list[str] = []
    prompt_api = await deployment.connect("prompt-api", errors)
    try:
        for round_ in range(50):  # the import carries interest across accounts shortly after the SUB
            for project in ("p1", "p2", "p3"):
                event = PromptPublished(
                    project_id=project, prompt_name="n", version=round_ + 1, sha256="0" * 64, published_by="u"
                )
                await prompt_api.publish(event.address(), event.to_bytes(), headers=event.headers())
            await sync_with_server(prompt_api, 5)
            await sync_with_server(planner.nc, 5)
            await sync_with_server(executor.nc, 5)
            if got["planner"] and got["executor"]:
                break
            await asyncio.sleep(0.05)
    finally:
        await prompt_api.close()
    assert got["planner"] and set(got["planner"]) == {"prompt.published.v1.p1"}, got
    assert got["executor"] and set(got["executor"]) == {"prompt.published.v1.p2"}, got
    assert errors == []
    # stockade.client's push refresh for a project the agent does not work for: refused, not silently deaf.
    host = deployment.url.removeprefix("nats://")
    url = f"nats://planner:{deployment.passwords['planner']}@{host}"
    core = ClientCore(
        "stk_x", ClientSettings(push=PushSettings(nats_url=url, project_ids=("p2",))), "http://x"
    )
    push = PromptPushSubscription(core, lambda project, name: None)
    with pytest.raises(ServerUnavailableError, match="prompt.published.v1.p2"):
        await push.start()
    assert not core.push_active
