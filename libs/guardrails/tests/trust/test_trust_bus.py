"""AgentBus against a real NATS server: what it sends to the trust-broker, and what its inbox yields.

The trust-broker itself (a service) is not imported here: the test plays its part on the wire (the same
headers, from stockade.contracts.agent_wire). Agents messaging each other through the real broker, under the
shipped NATS permissions: tests/deploy/test_agent_bus.py.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import nats
import pytest
from pydantic import ValidationError

from stockade.contracts import agent_wire, subjects
from stockade.contracts.nats_sync import sync_with_server
from stockade.guardrails.errors import CheckUnavailableError, ConfigError
from stockade.guardrails.trust import AttestationEnvelope, AttestationVerifier, KeyRing, TrustLevel
from stockade.guardrails.trust.bus import AgentBus, AgentBusSettings, SendResult, VerifiedMessage
from stockade.testing.ports import free_port

SECRET = "s" * 40


def settings(agent_id: str, url: str, **changes: Any) -> AgentBusSettings:
    values: dict[str, Any] = {
        "agent_id": agent_id,
        "nats_url": url,
        "signing_key_id": "k1",
        "signing_key": SECRET,
        "request_timeout_s": 10,  # the broker answers from this process: generous for a loaded machine
        **changes,
    }
    return AgentBusSettings(**values)


def test_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    key_file = tmp_path / "planner.key"
    key_file.write_text(SECRET + "\n")
    monkeypatch.setenv("STOCKADE_AGENT_ID", "planner")
    monkeypatch.setenv("STOCKADE_AGENT_NATS_URL", "nats://nats:4222")
    monkeypatch.setenv("STOCKADE_AGENT_NATS_PASSWORD", "pw-planner")
    monkeypatch.setenv("STOCKADE_AGENT_SIGNING_KEY_ID", "2026-11")
    monkeypatch.setenv("STOCKADE_AGENT_SIGNING_KEY_FILE", str(key_file))
    s = AgentBusSettings()
    assert (s.agent_id, s.nats_url, s.signing_key_id) == ("planner", "nats://nats:4222", "2026-11")
    assert s.nats_password is not None and s.nats_password.get_secret_value() == "pw-planner"
    assert s.secret() == SECRET.encode()  # the file's trailing newline is not part of the key
    assert "pw-planner" not in repr(s)


@pytest.mark.parametrize(
    "changes",
    [
        {"signing_key": None},  # no key at all
        {"signing_key_file": "/run/secrets/k"},  # two keys
        {"agent_id": "a.b"},  # not one subject token
        {"nats_password": "x", "nats_credentials_file": "/x.creds"},
    ],
)
def test_settings_refuse_ambiguous_or_unsafe_values(changes: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        settings(changes.pop("agent_id", "planner"), "nats://127.0.0.1:4222", **changes)


def test_a_short_or_unreadable_signing_key_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="at least 32"):
        AgentBus(settings("planner", "nats://127.0.0.1:4222", signing_key="short"))
    missing = tmp_path / "absent.key"
    with pytest.raises(ConfigError, match="cannot read"):
        AgentBus(settings("planner", "nats://x:1", signing_key=None, signing_key_file=missing))


async def test_connect_fails_fast_when_nats_is_unreachable() -> None:
    bus = AgentBus(settings("planner", f"nats://127.0.0.1:{free_port()}", connect_timeout_s=1))
    with pytest.raises(CheckUnavailableError, match="unreachable"):  # after connect_timeout_s, not forever
        await bus.connect()


class WireBroker:
    """Plays the trust-broker on the wire: verifies each submission with the sender's key and answers."""

    def __init__(self, nc: Any, agents: list[str]) -> None:
        keys = KeyRing({agent: {"k1": SECRET} for agent in agents})
        self.verifier = AttestationVerifier(keys)
        self.nc = nc
        self.received: list[Any] = []

    async def start(self) -> None:
        await self.nc.subscribe(subjects.TRUST_SUBMIT_WILDCARD, cb=self.on_submit)
        await sync_with_server(self.nc)

    async def on_submit(self, msg: Any) -> None:
        self.received.append(msg)
        envelope = AttestationEnvelope.parse(msg.headers[agent_wire.ATTESTATION])
        assert envelope is not None
        receiver = subjects.receiver_of_submit(msg.subject)
        result = await self.verifier.verify(envelope, msg.data, expected_receiver=receiver)
        if result.passed:
            answer = {"status": "delivered", "receiver": receiver, "nonce": envelope.nonce}
        else:
            answer = {"status": "rejected", "receiver": receiver, "reason": str(result.reason)}
            answer |= {"layer": str(result.layer), "error": result.error}
        await msg.respond(json.dumps(answer).encode())


@pytest.mark.nats
async def test_send_signs_a_fresh_envelope_and_returns_the_brokers_decision(
    nats_url: str, nats_client: Any, unique_name: Any
) -> None:
    sender, receiver = unique_name("planner"), unique_name("executor")
    broker = WireBroker(nats_client, [sender])
    await broker.start()
    async with AgentBus(settings(sender, nats_url)) as bus:
        first = await bus.send(receiver, '{"task": "summarize"}', capability="summarize")
        second = await bus.send(receiver, '{"task": "summarize"}', capability="summarize")
        assert first.delivered and second.delivered and first.nonce != second.nonce
        submitted = broker.received[0]
        assert submitted.subject == subjects.trust_submit(receiver)
        assert submitted.data == b'{"task": "summarize"}'  # the payload travels unchanged
        envelope = AttestationEnvelope.parse(submitted.headers[agent_wire.ATTESTATION])
        assert envelope is not None
        assert (envelope.sender, envelope.receiver, envelope.capability) == (sender, receiver, "summarize")
        assert abs(envelope.timestamp_ms / 1000 - time.time()) < 60 and len(envelope.nonce) >= 32

        # The same submission again: the broker's nonce check refuses it, and send() reports it as a value.
        reply = await nats_client.request(
            submitted.subject, submitted.data, headers=dict(submitted.headers), timeout=10
        )
        assert json.loads(reply.data)["reason"] == "replay"

        # A message signed with another key is rejected, not raised.
        forger = AgentBus(settings(sender, nats_url, signing_key="f" * 40))
        async with forger:
            forged = await forger.send(receiver, "pay 10")
        assert forged == SendResult(
            delivered=False,
            receiver=receiver,
            nonce=forged.nonce,
            reason="bad_signature",
            layer="B",
            error="signature does not match",
        )


@pytest.mark.nats
async def test_send_without_a_broker_is_unavailable_not_silent(nats_url: str, unique_name: Any) -> None:
    async with AgentBus(settings(unique_name("planner"), nats_url, request_timeout_s=1)) as bus:
        with pytest.raises(CheckUnavailableError, match="no trust-broker answered"):
            await bus.send(unique_name("nobody"), b"hello")


@pytest.mark.nats
async def test_inbox_yields_what_the_broker_verified_until_closed(
    nats_url: str, nats_client: Any, unique_name: Any
) -> None:
    agent = unique_name("executor")
    bus = await AgentBus(settings(agent, nats_url)).connect()
    received: list[VerifiedMessage] = []

    async def read() -> None:
        async for message in bus.inbox():
            received.append(message)

    reader = asyncio.create_task(read())
    inbox = subjects.agent_inbox(agent)
    await nats_client.publish(inbox, b"no broker headers")  # cannot happen under deploy/nats: skipped
    verified = {agent_wire.SENDER: "planner", agent_wire.SENDER_TRUST: "trusted", agent_wire.NONCE: "ab" * 16}
    await nats_client.publish(inbox, b"first", headers={**verified, agent_wire.CAPABILITY: "summarize"})
    await nats_client.publish(inbox, b"second", headers={**verified, agent_wire.KEY_ID: "k1"})
    await sync_with_server(nats_client)
    deadline = time.monotonic() + 20  # not a count of 10 ms sleeps: a loaded machine delivers late
    while len(received) < 2:
        if time.monotonic() > deadline:
            break  # the assertion below shows what did arrive
        await asyncio.sleep(0.01)
    await bus.close()
    await asyncio.wait_for(reader, timeout=5)  # close() ends the iteration
    assert [(m.payload, m.sender, m.trust_level, m.capability) for m in received] == [
        (b"first", "planner", TrustLevel.TRUSTED, "summarize"),
        (b"second", "planner", TrustLevel.TRUSTED, None),
    ]
    assert received[1].key_id == "k1" and received[0].text() == "first"


@pytest.mark.nats
async def test_a_bus_that_is_not_connected_says_so(nats_url: str) -> None:
    bus = AgentBus(settings("planner", nats_url))
    with pytest.raises(RuntimeError, match="not connected"):
        await bus.send("executor", b"x")
    with pytest.raises(RuntimeError, match="not connected"):
        await anext(bus.inbox())
    assert nats.__name__ == "nats"  # the nats extra is installed in this environment
