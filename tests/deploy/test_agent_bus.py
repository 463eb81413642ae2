"""Agents message each other through the real trust-broker, with only the grants deploy/nats gives them.

A real nats-server runs the shipped nats-server.conf and agents.conf (``deployment`` in conftest.py); the
trust-broker runs as its own NATS user; planner, executor and intern are AgentBus clients connected as their own
agent users. Nothing here uses a permission an agent does not have in production.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from stockade.contracts import agent_wire, subjects
from stockade.contracts.nats_sync import sync_with_server
from stockade.guardrails.errors import ConfigError
from stockade.guardrails.trust import AttestationVerifier, KeyRing, TrustLevel
from stockade.guardrails.trust.bus import AgentBus, AgentBusSettings, VerifiedMessage
from stockade.runtime.settings import NatsSettings
from stockade.trust_broker.main import TrustBrokerApp, create_app
from stockade.trust_broker.settings import TrustBrokerSettings

pytestmark = pytest.mark.nats

KEYS = {"planner": "p" * 32, "executor": "e" * 32, "intern": "i" * 32}


@pytest.fixture
async def broker(deployment: Any, tmp_path: Path) -> AsyncIterator[TrustBrokerApp]:
    registry = [
        {"id": "planner", "trust": "trusted", "capabilities": ["summarize"]},
        {"id": "executor", "trust": "restricted", "capabilities": ["summarize"]},
        {"id": "intern", "trust": "untrusted", "capabilities": ["summarize"]},
    ]
    for agent in registry:
        agent["keys"] = [{"id": "k1", "secret": KEYS[agent["id"]]}]
    trust = {"policy": {"min_sender_trust": "restricted"}, "attestation": {"freshness_window_s": 30}}
    config = tmp_path / "trust.yaml"
    config.write_text(yaml.safe_dump({"guardrails": {"trust": {**trust, "agents": registry}}}))
    nats = NatsSettings(
        url=deployment.url, user="trust-broker", password=deployment.passwords["trust-broker"]
    )
    app = create_app(TrustBrokerSettings(config_path=config, nats=nats))
    await app.start()
    try:
        yield app
    finally:
        await app.stop()


def agent_settings(deployment: Any, agent: str, **changes: Any) -> AgentBusSettings:
    values: dict[str, Any] = {
        "agent_id": agent,
        "nats_url": deployment.url,
        "nats_password": deployment.passwords[agent],
        "signing_key_id": "k1",
        "signing_key": KEYS[agent],
        **changes,
    }
    return AgentBusSettings(**values)


class Reader:
    """Runs ``bus.inbox()`` in the background and keeps what it yields."""

    def __init__(self, bus: AgentBus) -> None:
        self.messages: list[VerifiedMessage] = []
        self._task = asyncio.create_task(self._read(bus))

    async def _read(self, bus: AgentBus) -> None:
        async for message in bus.inbox():
            self.messages.append(message)

    async def wait_for(self, payload: bytes) -> None:
        for _ in range(500):
            if any(m.payload == payload for m in self.messages):
                return
            await asyncio.sleep(0.01)
        raise AssertionError(f"{payload!r} never reached the inbox; got {self.messages}")

    async def stop(self) -> None:
        await asyncio.wait_for(self._task, timeout=5)


async def test_a_message_reaches_the_receiver_with_what_the_broker_verified(
    deployment: Any, broker: TrustBrokerApp
) -> None:
    async with (
        AgentBus(agent_settings(deployment, "planner")) as planner,
        AgentBus(agent_settings(deployment, "executor")) as executor,
    ):
        inbox = Reader(executor)
        result = await planner.send(
            "executor", b'{"task": "summarize", "doc": "q3.pdf"}', capability="summarize"
        )
        assert result.delivered and result.reason is None
        await inbox.wait_for(b'{"task": "summarize", "doc": "q3.pdf"}')
        reply = await executor.send("planner", "done")  # and back: restricted is the policy's floor
        assert reply.delivered  # the planner never reads its inbox: close() must not wait for it
    await inbox.stop()
    [message] = inbox.messages
    assert (message.sender, message.trust_level, message.capability) == (
        "planner",
        TrustLevel.TRUSTED,
        "summarize",
    )
    assert message.nonce == result.nonce


async def submit(deployment: Any, user: str, envelope: Any, payload: bytes) -> dict[str, Any]:
    """Submit on a raw connection as agent ``user`` (its production grants, nothing more); the broker's answer."""
    errors: list[str] = []
    nc = await deployment.connect(user, errors, inbox_prefix=subjects.agent_reply_prefix(user))
    try:
        token = uuid.uuid4().hex  # as AgentBus.send(): the answer comes on agent.<user>.reply.<token>
        answer_on = await nc.subscribe(subjects.agent_reply(user, token), max_msgs=1)
        headers = {agent_wire.ATTESTATION: envelope.to_json(), agent_wire.REPLY_TOKEN: token}
        await nc.publish(subjects.trust_submit(envelope.receiver), payload, headers=headers)
        reply = await answer_on.next_msg(timeout=5)
    finally:
        await nc.close()
    assert errors == []
    answer: dict[str, Any] = json.loads(reply.data)
    return answer


async def test_replayed_forged_stale_and_untrusted_messages_never_reach_the_receiver(
    deployment: Any, broker: TrustBrokerApp
) -> None:
    planner_key = KeyRing({"planner": {"k1": KEYS["planner"]}})
    async with (
        AgentBus(agent_settings(deployment, "planner")) as planner,
        AgentBus(agent_settings(deployment, "intern")) as intern,
        AgentBus(agent_settings(deployment, "executor")) as executor,
    ):
        inbox = Reader(executor)
        # A valid submission, then the very same bytes again: a replay.
        envelope = AttestationVerifier(planner_key).sign(
            "planner", "executor", b"pay 10", capability="summarize"
        )
        first = await submit(deployment, "planner", envelope, b"pay 10")
        again = await submit(deployment, "planner", envelope, b"pay 10")
        assert (first["status"], again["status"], again["reason"]) == ("delivered", "rejected", "replay")
        # The intern claims to be the planner, signing with a key it made up.
        forged_key = KeyRing({"planner": {"k1": "f" * 32}})
        forged = AttestationVerifier(forged_key).sign("planner", "executor", b"pay 1000")
        answer = await submit(deployment, "intern", forged, b"pay 1000")
        assert (answer["status"], answer["reason"], answer["layer"]) == ("rejected", "bad_signature", "B")
        # Ten minutes old; and the untrusted intern under its own name: refused too.
        old = AttestationVerifier(planner_key, clock=lambda: time.time() - 600).sign(
            "planner", "executor", b"old"
        )
        assert (await submit(deployment, "planner", old, b"old"))["reason"] == "stale"
        assert (await intern.send("executor", b"from the intern")).reason == "trust_too_low"
        assert (await planner.send("executor", b"marker")).delivered
        await inbox.wait_for(b"marker")
    await inbox.stop()
    assert [m.payload for m in inbox.messages] == [b"pay 10", b"marker"]


async def test_an_agent_cannot_read_another_inbox_or_step_outside_its_grants(
    deployment: Any, broker: TrustBrokerApp
) -> None:
    # The planner's NATS user, configured as the executor: the server refuses the executor's inbox.
    impostor = AgentBus(
        agent_settings(
            deployment, "executor", nats_user="planner", nats_password=deployment.passwords["planner"]
        )
    )
    with pytest.raises(ConfigError, match="agent.executor.inbox"):
        await impostor.connect()

    errors: list[str] = []
    async with (
        AgentBus(agent_settings(deployment, "executor")) as executor,
        AgentBus(agent_settings(deployment, "planner")) as planner,
    ):
        inbox = Reader(executor)
        nc = await deployment.connect("planner", errors, inbox_prefix=subjects.agent_reply_prefix("planner"))
        spoof = {
            agent_wire.SENDER: "treasurer",
            agent_wire.SENDER_TRUST: "privileged",
            agent_wire.NONCE: "ab" * 16,
        }
        await nc.publish(subjects.agent_inbox("executor"), b"spoofed", headers=spoof)
        for subject in (subjects.PROMPT_PUBLISHED, subjects.TRUST_REJECTED, subjects.MODEL_CHANGED):
            await nc.publish(subject, b"x")
        for subject in ("_INBOX_executor.>", subjects.agent_inbox("intern"), subjects.TRUST_SUBMIT_WILDCARD):
            await nc.subscribe(subject)
        for _ in range(2):  # the second PONG surely follows every -ERR (see AgentBus.connect)
            await sync_with_server(nc, 5)
        await nc.close()
        await planner.send("executor", b"marker")
        await inbox.wait_for(b"marker")
    await inbox.stop()
    assert [m.payload for m in inbox.messages] == [b"marker"]
    denied = " ".join(errors).lower()
    for what in (
        'publish to "agent.executor.inbox"',
        'publish to "prompt.published.v1"',
        'publish to "trust.rejected.v1"',
        'publish to "model.changed.v1"',
        'subscription to "_inbox_executor.>"',
        'subscription to "agent.intern.inbox"',
        'subscription to "trust.submit.*"',
    ):
        assert f"permissions violation for {what}" in denied, what


async def test_the_broker_answers_only_on_the_senders_own_reply_subject(
    deployment: Any, broker: TrustBrokerApp
) -> None:
    """NATS does not check a reply subject against the publisher's permissions: the broker must not answer where
    the sender points it (another agent's inbox or replies, the catalogue's events), nor where a forged
    Nats-Request-Info header names another agent (the server overwrites it across the service import)."""
    watch_errors: list[str] = []
    watcher = await deployment.connect("executor", watch_errors)  # the victim, with its own grants only
    seen: list[tuple[str, bytes]] = []

    async def keep(msg: Any) -> None:
        seen.append((msg.subject, msg.data))

    targets = (
        subjects.MODEL_CHANGED,
        subjects.DBCONFIG_ACTIVATED,
        subjects.agent_inbox("executor"),
        subjects.agent_reply("executor", "t1"),
    )
    for subject in (*targets, subjects.agent_replies("executor")):
        await watcher.subscribe(subject, cb=keep)
    await sync_with_server(watcher, 5)
    errors: list[str] = []
    nc = await deployment.connect("planner", errors, inbox_prefix=subjects.agent_reply_prefix("planner"))
    planner_key = KeyRing({"planner": {"k1": KEYS["planner"]}})
    signer = AttestationVerifier(planner_key)
    try:
        for target in targets:  # the reply subject aimed at the victim, with and without a token
            for token in (None, "t1"):
                envelope = signer.sign("planner", "executor", b"x")
                headers = {agent_wire.ATTESTATION: envelope.to_json()}
                if token:
                    headers[agent_wire.REPLY_TOKEN] = token
                headers[agent_wire.REQUEST_INFO] = json.dumps({"acc": "AGENTS", "user": "executor"})
                await nc.publish(subjects.trust_submit("executor"), b"x", reply=target, headers=headers)
        # The broker did answer the planner (so silence above is the rule, not a broker that answers nobody).
        own = await submit(deployment, "planner", signer.sign("planner", "executor", b"y"), b"y")
        assert own["status"] == "delivered"
        await sync_with_server(watcher, 5)
    finally:
        await nc.close()
        await watcher.close()
    # Only the delivered messages reach the executor's inbox, with the broker's headers; no broker answer.
    assert [s for s, _ in seen if s != subjects.agent_inbox("executor")] == []
    assert all(b"status" not in data for _, data in seen), seen
    assert errors == [] and watch_errors == []
