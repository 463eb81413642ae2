"""stockade.contracts.nats_sync on a real nats-server: a subscription is live for every other connection once
``sync_with_server`` returns, round after round (nats-py's own flush can return before the server read the SUB:
112 of 2,000 rounds got "no responders" on a loaded machine)."""

import nats
import pytest

from stockade.contracts.nats_sync import sync_with_server
from stockade.testing.nats import NatsServerFactory

pytestmark = pytest.mark.nats


async def test_a_subscription_answers_another_connection_as_soon_as_it_is_synced(nats_url: str) -> None:
    subscriber, requester = await nats.connect(nats_url), await nats.connect(nats_url)

    async def answer(msg: nats.aio.msg.Msg) -> None:
        await msg.respond(b"here")

    try:
        missed = 0
        for i in range(500):
            sub = await subscriber.subscribe(f"sync.check.{i}", cb=answer)
            await sync_with_server(subscriber)
            try:
                await requester.request(f"sync.check.{i}", b"", timeout=5)
            except nats.errors.NoRespondersError:
                missed += 1
            await sub.unsubscribe()
        assert missed == 0, f"{missed} of 500 requests found no subscriber"
    finally:
        await subscriber.close()
        await requester.close()


async def test_a_refused_subscription_is_reported_once_synced(nats_server_factory: NatsServerFactory) -> None:
    server = nats_server_factory(
        'authorization { users = [ { user: "a", password: "a", permissions: { subscribe: "allowed.>" } } ] }'
    )
    errors: list[str] = []

    async def on_error(exc: Exception) -> None:
        errors.append(str(exc).lower())

    nc = await nats.connect(server.url, user="a", password="a", error_cb=on_error)
    try:
        for i in range(50):
            await nc.subscribe(f"denied.{i}")
            await sync_with_server(nc)
            assert any(f'"denied.{i}"' in e for e in errors), f"refusal {i} not read yet"
    finally:
        await nc.close()
