"""A service's requests get their replies on its own inbox prefix, ``_INBOX_<user>`` (finding N13): the broker,
the plain connection and the probe connection all use it, on a real nats-server that lets each user read only its
own replies (as deploy/nats does)."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from stockade.runtime.bus import connect_broker, make_broker, stop_broker
from stockade.runtime.nats import connect_nats, probe_connect
from stockade.runtime.settings import NatsSettings

pytestmark = pytest.mark.nats

CONFIG = """
authorization {
  users: [
    { user: svc-a, password: pa, permissions: {
        publish: { allow: ["ask.a", "answer"] }, subscribe: { allow: ["_INBOX_svc-a.>"] }, allow_responses: true } }
    { user: svc-b, password: pb, permissions: {
        publish: { allow: ["answer"] }, subscribe: { allow: ["ask.>", "_INBOX_svc-b.>"] }, allow_responses: true } }
  ]
}
"""


def test_the_prefix_follows_the_user() -> None:
    assert NatsSettings(user="model-api").reply_prefix() == "_INBOX_model-api"
    assert NatsSettings().reply_prefix() == "_INBOX"  # no user: nats-py's default
    assert NatsSettings(user="model-api", inbox_prefix="_INBOX_custom").reply_prefix() == "_INBOX_custom"
    with pytest.raises(ValueError):
        NatsSettings(user="model-api", inbox_prefix="_INBOX.>")


async def test_every_connection_of_a_user_gets_its_replies(nats_server_factory) -> None:
    server = nats_server_factory(CONFIG)
    responder = await probe_connect(server.url, timeout_s=5, user="svc-b", password="pb")

    async def answer(msg) -> None:
        await msg.respond(b"yes")

    await responder.subscribe("ask.a", cb=answer)
    await responder.flush()
    settings = NatsSettings(url=server.url, user="svc-a", password=SecretStr("pa"), startup_wait_s=5)
    broker = make_broker(settings, name="svc-a")
    plain = await connect_nats(settings, name="svc-a")
    probe = await probe_connect(server.url, timeout_s=5, user="svc-a", password="pa")
    try:
        via_broker = await connect_broker(broker, settings)
        for nc in (via_broker, plain, probe):
            reply = await nc.request("ask.a", b"?", timeout=5)
            assert reply.data == b"yes" and reply.subject.startswith("_INBOX_svc-a.")
    finally:
        await stop_broker(broker, 5)
        await plain.close()
        await probe.close()
        await responder.close()
