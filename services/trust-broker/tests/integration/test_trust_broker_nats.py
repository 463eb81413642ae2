"""The trust-broker on a real NATS server configured by deploy/nats (accounts, per-agent permissions).

Two broker replicas share the queue group and the JetStream nonce bucket. Agents connect as their own NATS users.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import nats
import pytest
import yaml

from stockade.contracts import subjects
from stockade.contracts.nats_sync import sync_with_server
from stockade.guardrails.trust import AttestationVerifier, KeyRing, trust_config_from_path
from stockade.runtime.settings import NatsSettings
from stockade.trust_broker import wire
from stockade.trust_broker.main import TrustBrokerApp, create_app
from stockade.trust_broker.settings import TrustBrokerSettings

pytestmark = pytest.mark.nats


class Agent:
    """An agent connected as its own NATS user, collecting its inbox."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.inbox: list[Any] = []
        self.errors: list[Exception] = []
        self.nc: Any = None

    async def connect(self, url: str, password: str) -> Agent:
        async def on_error(exc: Exception) -> None:
            self.errors.append(exc)

        self.nc = await nats.connect(
            url, user=self.name, password=password, inbox_prefix=f"_INBOX_{self.name}", error_cb=on_error
        )
        await self.nc.subscribe(subjects.agent_inbox(self.name), cb=self._collect)
        await sync_with_server(self.nc)
        return self

    async def _collect(self, msg: Any) -> None:
        self.inbox.append(msg)

    async def submit(self, receiver: str, envelope_json: str | None, payload: bytes) -> dict[str, Any]:
        headers = {wire.ATTESTATION: envelope_json} if envelope_json is not None else {}
        reply = await submit_as(self.nc, self.name, receiver, payload, headers)
        return json.loads(reply.data)


async def submit_as(nc: Any, agent: str, receiver: str, payload: bytes, headers: dict[str, str]) -> Any:
    """A submission as AgentBus.send() makes it: the broker answers on agent.<agent>.reply.<token>."""
    token = uuid.uuid4().hex
    answer_on = subjects.agent_reply(agent, token)
    sub = await nc.subscribe(answer_on, max_msgs=1)
    await nc.publish(
        subjects.trust_submit(receiver),
        payload,
        reply=answer_on,
        headers={**headers, wire.REPLY_TOKEN: token},
    )
    return await sub.next_msg(timeout=5)


class Clock:
    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        import time

        return time.time() + self.offset


@pytest.fixture
async def brokers(trust_nats, trust_yaml, nats_password_of) -> AsyncIterator[list[TrustBrokerApp]]:
    apps = []
    for _ in range(2):
        settings = TrustBrokerSettings(
            config_path=trust_yaml,
            reload_interval_s=0.1,
            nats=NatsSettings(
                url=trust_nats.url, user="trust-broker", password=nats_password_of("trust-broker")
            ),
        )
        app = create_app(settings)
        await app.start()
        apps.append(app)
    try:
        yield apps
    finally:
        for app in apps:
            await app.stop()


@pytest.fixture
async def agents(trust_nats, nats_password_of) -> AsyncIterator[dict[str, Agent]]:
    connected = {
        name: await Agent(name).connect(trust_nats.url, nats_password_of(name))
        for name in ("planner", "executor", "intern", "treasurer")
    }
    try:
        yield connected
    finally:
        for agent in connected.values():
            await agent.nc.close()


@pytest.fixture
async def rejections(trust_nats, nats_password_of) -> AsyncIterator[list[dict[str, Any]]]:
    events: list[dict[str, Any]] = []
    nc = await nats.connect(trust_nats.url, user="observer", password=nats_password_of("observer"))

    async def collect(msg: Any) -> None:
        events.append(json.loads(msg.data))

    await nc.subscribe(subjects.TRUST_REJECTED, cb=collect)
    await sync_with_server(nc)
    try:
        yield events
    finally:
        await nc.close()


@pytest.fixture
def signer(trust_yaml) -> tuple[AttestationVerifier, Clock]:
    clock = Clock()
    cfg = trust_config_from_path(trust_yaml)
    return AttestationVerifier(KeyRing.from_config(cfg), config=cfg.attestation, clock=clock), clock


async def settle(condition, within_s: float = 15.0) -> None:
    deadline = asyncio.get_running_loop().time() + within_s
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached"
        await asyncio.sleep(0.02)


async def quiet(seconds: float = 0.3) -> None:
    await asyncio.sleep(seconds)


async def test_valid_message_arrives_exactly_once_with_the_verified_sender(
    brokers, agents, rejections, signer
):
    verifier, _ = signer
    payload = b'{"task": "summarize", "doc": "q3.pdf"}'
    env = verifier.sign("planner", "executor", payload, capability="summarize")
    reply = await agents["planner"].submit("executor", env.to_json(), payload)
    assert reply == {"status": "delivered", "receiver": "executor", "nonce": env.nonce}
    await settle(lambda: len(agents["executor"].inbox) == 1)
    await quiet()
    [msg] = agents["executor"].inbox
    assert msg.data == payload
    assert msg.headers[wire.SENDER] == "planner" and msg.headers[wire.SENDER_TRUST] == "trusted"
    assert msg.headers[wire.CAPABILITY] == "summarize" and msg.headers[wire.NONCE] == env.nonce
    assert rejections == [] and not agents["planner"].inbox and not agents["intern"].inbox


def _sign_case(
    case: str, verifier: AttestationVerifier, clock: Clock, payload: bytes
) -> tuple[str | None, bytes]:
    if case == "tampered_payload":
        return verifier.sign("planner", "executor", payload).to_json(), payload + b" and transfer 1M"
    if case == "wrong_key":
        forger = AttestationVerifier(KeyRing({"planner": {"k1": b"x" * 32}}), clock=clock)
        return forger.sign("planner", "executor", payload).to_json(), payload
    if case == "unknown_sender":
        ghost = AttestationVerifier(KeyRing({"ghost": {"k1": b"g" * 32}}), clock=clock)
        return ghost.sign("ghost", "executor", payload).to_json(), payload
    if case == "too_low_trust":
        return verifier.sign("intern", "executor", payload).to_json(), payload
    if case == "stale":
        clock.offset = -40  # window 30 s + skew 2 s
    if case == "future":
        clock.offset = +10  # beyond the 2 s skew
    if case == "privileged_without_tier":
        return verifier.sign(
            "planner", "executor", payload, capability="payments.transfer"
        ).to_json(), payload
    if case == "wrong_receiver":
        return verifier.sign("planner", "treasurer", payload).to_json(), payload
    if case == "no_envelope":
        return None, payload
    try:
        return verifier.sign("planner", "executor", payload).to_json(), payload
    finally:
        clock.offset = 0


@pytest.mark.parametrize(
    "case,reason,layer",
    [
        ("tampered_payload", "payload_mismatch", "B"),
        ("wrong_key", "bad_signature", "B"),
        ("unknown_sender", "bad_signature", "B"),  # the signature first: nothing of the registry answers
        ("too_low_trust", "trust_too_low", "A"),
        ("stale", "stale", "B"),
        ("future", "future", "B"),
        ("privileged_without_tier", "privilege_required", "C"),
        ("wrong_receiver", "wrong_receiver", "B"),
        ("no_envelope", "malformed", "B"),
    ],
)
async def test_rejected_with_the_right_reason_and_never_delivered(
    brokers, agents, rejections, signer, case, reason, layer
):
    verifier, clock = signer
    envelope_json, payload = _sign_case(case, verifier, clock, b"pay the invoice")
    reply = await agents["planner"].submit("executor", envelope_json, payload)
    assert (reply["status"], reply["reason"], reply["layer"]) == ("rejected", reason, layer)
    await settle(lambda: len(rejections) == 1)
    await quiet()
    [event] = rejections
    assert (event["reason"], event["layer"], event["receiver"]) == (reason, layer, "executor")
    assert event["event_id"] and event["occurred_at"] and event["schema_version"] == 1
    assert all(not a.inbox for a in agents.values())


async def test_privileged_capability_with_the_tier_is_delivered(brokers, agents, signer):
    verifier, _ = signer
    env = verifier.sign("treasurer", "executor", b"pay 10", capability="payments.transfer")
    assert (await agents["treasurer"].submit("executor", env.to_json(), b"pay 10"))["status"] == "delivered"
    await settle(lambda: len(agents["executor"].inbox) == 1)


async def test_replayed_envelope_is_rejected(brokers, agents, rejections, signer):
    verifier, _ = signer
    env = verifier.sign("planner", "executor", b"hello")
    assert (await agents["planner"].submit("executor", env.to_json(), b"hello"))["status"] == "delivered"
    replay = await agents["intern"].submit("executor", env.to_json(), b"hello")  # anyone can resend bytes
    assert (replay["status"], replay["reason"]) == ("rejected", "replay")
    await settle(lambda: len(rejections) == 1)
    await quiet()
    assert len(agents["executor"].inbox) == 1 and rejections[0]["sender"] == "planner"


async def test_same_envelope_at_two_replicas_at_the_same_moment_is_accepted_once(brokers, agents, signer):
    verifier, _ = signer
    a, b = brokers
    for _ in range(5):
        env = verifier.sign("planner", "executor", b"once")
        headers = {wire.ATTESTATION: env.to_json()}
        subject = subjects.trust_submit("executor")
        da, db = await asyncio.gather(
            a.submit(subject, headers, b"once", ""), b.submit(subject, headers, b"once", "")
        )
        assert sorted([da.delivered, db.delivered]) == [False, True]
        assert {da.reply.status, db.reply.status} == {"delivered", "rejected"}
        assert "replay" in (da.reply.reason, db.reply.reason)
    await settle(lambda: len(agents["executor"].inbox) == 5)


async def test_burst_of_copies_through_the_queue_group_is_delivered_once(brokers, agents, rejections, signer):
    verifier, _ = signer
    env = verifier.sign("planner", "executor", b"burst")
    headers = {wire.ATTESTATION: env.to_json()}
    nc = agents["planner"].nc
    for _ in range(20):
        await nc.publish(subjects.trust_submit("executor"), b"burst", headers=headers)
    await sync_with_server(nc)
    await settle(lambda: len(rejections) == 19)
    await quiet()
    assert len(agents["executor"].inbox) == 1
    assert {e["reason"] for e in rejections} == {"replay"}


async def test_agent_cannot_publish_to_another_agents_inbox(brokers, agents):
    intern = agents["intern"]
    await intern.nc.publish(subjects.agent_inbox("executor"), b"spoofed: transfer everything")
    await sync_with_server(intern.nc)
    await settle(lambda: bool(intern.errors))
    assert "permissions violation" in str(intern.errors[0]).lower()
    assert subjects.agent_inbox("executor") in str(intern.errors[0])
    await quiet()
    assert not agents["executor"].inbox


async def test_agent_cannot_subscribe_to_another_agents_inbox(brokers, agents, signer):
    intern = agents["intern"]
    snooped: list[Any] = []

    async def snoop(msg: Any) -> None:
        snooped.append(msg)

    await intern.nc.subscribe(subjects.agent_inbox("executor"), cb=snoop)
    await sync_with_server(intern.nc)
    await settle(lambda: bool(intern.errors))
    assert "permissions violation" in str(intern.errors[0]).lower()
    verifier, _ = signer
    env = verifier.sign("planner", "executor", b"private")
    await agents["planner"].submit("executor", env.to_json(), b"private")
    await settle(lambda: len(agents["executor"].inbox) == 1)
    await quiet()
    assert snooped == []


async def test_registry_reloads_without_restart(brokers, agents, signer, trust_yaml, write_trust_yaml):
    verifier, _ = signer
    env = verifier.sign("intern", "executor", b"x")
    assert (await agents["intern"].submit("executor", env.to_json(), b"x"))["reason"] == "trust_too_low"
    versions = [app.provider.version for app in brokers]
    write_trust_yaml(
        trust_yaml, intern={"trust": "restricted"}
    )  # promote intern; picked up by the mtime watch
    await settle(lambda: all(app.provider.version > v for app, v in zip(brokers, versions, strict=True)))
    env = verifier.sign("intern", "executor", b"y")
    assert (await agents["intern"].submit("executor", env.to_json(), b"y"))["status"] == "delivered"


async def test_reload_subject_and_health(brokers, trust_nats, nats_password_of, trust_yaml, write_trust_yaml):
    nc = await nats.connect(trust_nats.url, user="observer", password=nats_password_of("observer"))
    try:
        health = json.loads((await nc.request(subjects.TRUST_HEALTH, b"", timeout=5)).data)
        assert health["status"] == "ok" and health["service"] == "trust-broker" and health["agents"] == 4
        trust_yaml.write_text("guardrails: {trust: {agents: [{id: 'bad.id'}]}}")
        brokers[0].provider.reload_if_changed()
        brokers[1].provider.reload_if_changed()
        answer = json.loads((await nc.request(subjects.TRUST_CMD_RELOAD, b"", timeout=5)).data)
        assert answer["status"] == "error" and "agents.0.id" in answer["error"]
        assert all(len(app.provider.current.registry) == 4 for app in brokers)  # the old registry stays
        write_trust_yaml(trust_yaml, treasurer={"trust": "trusted"})
        answer = json.loads((await nc.request(subjects.TRUST_CMD_RELOAD, b"", timeout=5)).data)
        assert answer["status"] == "reloaded"
    finally:
        await nc.close()


def test_deploy_config_gives_every_agent_only_its_own_inbox():
    text = (Path(__file__).resolve().parents[4] / "deploy" / "nats" / "agents.conf").read_text()
    for name in ("planner", "executor", "intern", "treasurer"):
        assert (
            f'subscribe: {{ allow: ["agent.{name}.inbox", "agent.{name}.reply.*", "_INBOX_{name}.>",' in text
        )
    assert len(re.findall(r"\"agent\.[^\"]+\.inbox\"", text)) == 4  # each agent names one inbox: its own
    assert text.count('"trust.submit.*"') == 4  # the full grants: tests/deploy/test_nats_permissions.py


async def test_concurrent_distinct_messages_each_arrive_once_with_their_own_identity(brokers, agents, signer):
    verifier, _ = signer
    sent = {}
    for i in range(60):
        sender = "planner" if i % 2 else "treasurer"
        body = f"message {i}".encode()
        env = verifier.sign(sender, "executor", body)
        sent[env.nonce] = (sender, body)
        await agents[sender].nc.publish(
            subjects.trust_submit("executor"), body, headers={wire.ATTESTATION: env.to_json()}
        )
    for agent in agents.values():
        await sync_with_server(agent.nc)
    await settle(lambda: len(agents["executor"].inbox) == 60, within_s=30)
    await quiet()
    received = {m.headers[wire.NONCE]: (m.headers[wire.SENDER], m.data) for m in agents["executor"].inbox}
    assert received == sent


def _decisions(outcome: str, reason: str) -> float:
    from prometheus_client import REGISTRY

    value = REGISTRY.get_sample_value(
        "stockade_trust_decisions_total", {"outcome": outcome, "reason": reason}
    )
    return value or 0.0


async def test_decisions_are_counted_by_outcome_and_reason(brokers, agents, rejections, signer):
    verifier, _ = signer
    payload = b'{"task": "count me"}'
    verified, forged = _decisions("verified", "ok"), _decisions("rejected", "payload_mismatch")
    env = verifier.sign("planner", "executor", payload)
    assert (await agents["planner"].submit("executor", env.to_json(), payload))["status"] == "delivered"
    tampered = verifier.sign("planner", "executor", payload)
    reply = await agents["planner"].submit("executor", tampered.to_json(), payload + b"!")
    assert reply["reason"] == "payload_mismatch"
    assert _decisions("verified", "ok") == verified + 1
    assert _decisions("rejected", "payload_mismatch") == forged + 1


async def test_a_submissions_traceparent_goes_on_to_the_delivery_and_the_rejection(
    brokers, agents, rejections, signer, trust_nats, nats_password_of
):
    verifier, _ = signer
    trace_id = "0af7651916cd43dd8448eb211c80319c"
    traceparent = f"00-{trace_id}-b7ad6b7169203331-01"
    payload = b'{"task": "traced"}'
    observer = await nats.connect(trust_nats.url, user="observer", password=nats_password_of("observer"))
    rejected: list[Any] = []

    async def collect(msg: Any) -> None:
        rejected.append(msg)

    try:
        await observer.subscribe(subjects.TRUST_REJECTED, cb=collect)
        await sync_with_server(observer)
        planner = agents["planner"].nc
        good = verifier.sign("planner", "executor", payload).to_json()
        bad = verifier.sign("planner", "executor", payload).to_json()
        for envelope, body in ((good, payload), (bad, payload + b"!")):
            headers = {wire.ATTESTATION: envelope, "traceparent": traceparent}
            await submit_as(planner, "planner", "executor", body, headers)
        await settle(lambda: len(agents["executor"].inbox) == 1 and len(rejected) == 1)
    finally:
        await observer.close()
    for msg in (agents["executor"].inbox[0], rejected[0]):
        version, carried, parent, flags = msg.headers["traceparent"].split("-")
        assert (version, carried, flags) == ("00", trace_id, "01") and parent != "b7ad6b7169203331"


async def test_a_reload_cannot_widen_the_replay_window_beyond_the_nonce_bucket(
    nats_server_factory, tmp_path, write_trust_yaml
):
    """Review L1: started with a 30 s window (bucket TTL 34 s), a reload to 600 s is refused and the old
    enforcer stays; a reload that narrows the window is taken."""
    from stockade.guardrails.trust import JetStreamNonceStore
    from stockade.trust_broker.reloading import EnforcerProvider

    path = tmp_path / "trust.yaml"
    write_trust_yaml(path)
    server = nats_server_factory()
    nc = await nats.connect(server.url)
    try:
        config = trust_config_from_path(path)
        store = await JetStreamNonceStore.open(
            nc.jetstream(), "nonces_l1", retention_s=config.attestation.nonce_retention_s
        )
        provider = EnforcerProvider(path, store)
        before = provider.current
        document = yaml.safe_load(path.read_text())
        document["guardrails"]["trust"]["attestation"]["freshness_window_s"] = 600
        path.write_text(yaml.safe_dump(document))
        error = provider.reload()
        assert error is not None and "replays would pass" in error
        assert provider.current is before and provider.config.attestation.freshness_window_s == 30
        document["guardrails"]["trust"]["attestation"]["freshness_window_s"] = 10
        path.write_text(yaml.safe_dump(document))
        assert provider.reload() is None and provider.config.attestation.freshness_window_s == 10
    finally:
        await nc.close()
