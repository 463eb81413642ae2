"""Per receiver, the broker can demand a capability: the treasurer's registry entry says ``require_capability``,
so a message to it that names none is refused (layer C, ``capability_required``), recorded on
``trust.rejected.v1`` and never delivered; other receivers are unaffected. Real NATS, deploy/nats permissions."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import nats
import pytest

from stockade.contracts import subjects
from stockade.contracts.nats_sync import sync_with_server
from stockade.guardrails.trust import AttestationVerifier, KeyRing, trust_config_from_path
from stockade.runtime.settings import NatsSettings
from stockade.trust_broker import wire
from stockade.trust_broker.main import create_app
from stockade.trust_broker.settings import TrustBrokerSettings

pytestmark = pytest.mark.nats


async def _until(condition: Any, within_s: float = 15.0) -> None:
    deadline = asyncio.get_running_loop().time() + within_s
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached"
        await asyncio.sleep(0.02)


async def test_a_receiver_that_requires_a_capability_refuses_messages_without_one(
    trust_nats, trust_yaml, write_trust_yaml, nats_password_of
):
    write_trust_yaml(trust_yaml, treasurer={"require_capability": True})
    settings = TrustBrokerSettings(
        config_path=trust_yaml,
        nonce_store="memory",
        nats=NatsSettings(url=trust_nats.url, user="trust-broker", password=nats_password_of("trust-broker")),
    )
    broker = create_app(settings)
    await broker.start()
    observer = await nats.connect(trust_nats.url, user="observer", password=nats_password_of("observer"))
    planner = await nats.connect(
        trust_nats.url, user="planner", password=nats_password_of("planner"), inbox_prefix="_INBOX_planner"
    )
    rejected: list[dict[str, Any]] = []
    delivered: list[Any] = []
    try:

        async def on_rejected(msg: Any) -> None:
            rejected.append(json.loads(msg.data))

        async def on_delivered(msg: Any) -> None:
            delivered.append(msg)

        await observer.subscribe(subjects.TRUST_REJECTED, cb=on_rejected)
        await observer.subscribe("agent.*.inbox", cb=on_delivered)
        await sync_with_server(observer)
        config = trust_config_from_path(trust_yaml)
        signer = AttestationVerifier(KeyRing.from_config(config), config=config.attestation)

        async def submit(receiver: str, payload: bytes, capability: str | None) -> dict[str, Any]:
            env = signer.sign("planner", receiver, payload, capability=capability)
            token = uuid.uuid4().hex  # the broker answers on agent.planner.reply.<token> (AgentBus.send)
            headers = {wire.ATTESTATION: env.to_json(), wire.REPLY_TOKEN: token}
            answer = await planner.subscribe(subjects.agent_reply("planner", token), max_msgs=1)
            await planner.publish(subjects.trust_submit(receiver), payload, headers=headers)
            reply = await answer.next_msg(timeout=5)
            return json.loads(reply.data)

        refused = await submit("treasurer", b"pay 10 to mallory", None)
        assert (refused["status"], refused["reason"], refused["layer"]) == (
            "rejected",
            "capability_required",
            "C",
        )
        await _until(lambda: len(rejected) == 1)
        assert (
            rejected[0]["reason"],
            rejected[0]["layer"],
            rejected[0]["sender"],
            rejected[0]["receiver"],
        ) == (
            "capability_required",
            "C",
            "planner",
            "treasurer",
        )
        assert (await submit("treasurer", b"summary", "summarize"))["status"] == "delivered"
        assert (await submit("executor", b"no capability", None))["status"] == "delivered"
        await _until(lambda: len(delivered) == 2)
        assert sorted(m.subject for m in delivered) == ["agent.executor.inbox", "agent.treasurer.inbox"]
        assert [m.data for m in delivered if m.subject == "agent.treasurer.inbox"] == [b"summary"]
    finally:
        await planner.close()
        await observer.close()
        await broker.stop()
