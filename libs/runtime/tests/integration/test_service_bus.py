"""The service's bus (stockade.runtime.bus): one FastStream broker owns the connection, subscribers declared in
``on_startup`` answer on a real nats-server, shutdown lets a handler finish, and a service that must serve
without NATS starts without it and picks the bus up when the server appears."""

from __future__ import annotations

import asyncio
import socket
import time
import uuid
from typing import Any

import httpx
import nats
import pytest

from stockade.contracts.nats_sync import sync_with_server
from stockade.contracts.replies import HealthReply
from stockade.runtime.app import ServiceState, create_service_app
from stockade.runtime.bus import raw_body
from stockade.runtime.settings import NatsSettings, ServiceSettings

pytestmark = pytest.mark.nats


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def echo_app(
    url: str, *, wait_for_nats: bool = True, slow_s: float = 0.0, started: asyncio.Event | None = None
) -> Any:
    settings = ServiceSettings(service_name="echo", nats=NatsSettings(url=url, connect_timeout_s=0.5))
    handled: list[bytes] = []

    async def on_startup(state: ServiceState[list[bytes]]) -> list[bytes]:
        assert state.broker is not None

        @state.broker.subscriber("echo.cmd.upper.v1", queue="echo", decoder=raw_body)
        async def upper(body: bytes) -> bytes:
            if started is not None:
                started.set()
            await asyncio.sleep(slow_s)
            handled.append(body)
            return body.upper()

        return handled

    app = create_service_app(
        settings,
        title="echo",
        health_subject="echo.cmd.health.v1",
        uses_db=False,
        wait_for_nats=wait_for_nats,
        on_startup=on_startup,
    )
    return app


async def test_a_subscriber_declared_at_startup_answers_and_shares_the_one_connection(nats_url: str) -> None:
    app = echo_app(nats_url)
    client = await nats.connect(nats_url)
    try:
        async with app.router.lifespan_context(app):
            state = app.state.service
            assert state.nats is state.broker.connection  # one connection, owned by the broker
            reply = await client.request("echo.cmd.upper.v1", b"hello", timeout=5)
            assert reply.data == b"HELLO"
            health = HealthReply.model_validate_json(
                (await client.request("echo.cmd.health.v1", b"", timeout=5)).data
            )
            assert (health.status, health.service) == ("ok", "echo")
        assert state.nats.is_closed  # drained on shutdown
    finally:
        await client.close()


async def test_shutdown_lets_a_request_in_flight_finish(nats_url: str) -> None:
    started = asyncio.Event()
    app = echo_app(nats_url, slow_s=0.5, started=started)
    client = await nats.connect(nats_url)
    try:
        async with app.router.lifespan_context(app):
            pending = asyncio.create_task(client.request("echo.cmd.upper.v1", b"late", timeout=10))
            await asyncio.wait_for(started.wait(), timeout=10)  # the handler has the message; now shut down
        assert (await pending).data == b"LATE"
    finally:
        await client.close()


async def test_without_wait_the_service_starts_before_nats_and_serves_the_bus_once_it_appears(
    nats_server_factory: Any,
) -> None:
    port = free_port()
    app = echo_app(f"nats://127.0.0.1:{port}", wait_for_nats=False)
    async with app.router.lifespan_context(app):
        state = app.state.service
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
            ready = await http.get("/readyz")
            assert ready.status_code == 200  # NATS is not needed to serve
        assert state.nats is None
        server = nats_server_factory(port=port)
        client = await nats.connect(server.url)
        try:
            # The broker retries in the background and starts its subscribers once connected: ask until one
            # answers (a deadline, not a count of short tries: a loaded machine connects late).
            deadline = time.monotonic() + 20
            reply = None
            while reply is None:
                try:
                    reply = await client.request("echo.cmd.upper.v1", b"late start", timeout=5)
                except nats.errors.NoRespondersError:
                    assert time.monotonic() < deadline, "the bus never served after NATS appeared"
                    await asyncio.sleep(0.05)
            assert reply.data == b"LATE START"
            assert state.nats is not None and state.nats.is_connected
        finally:
            await client.close()


async def test_an_event_subscriber_never_answers_so_a_jetstream_publish_gets_its_ack(nats_url: str) -> None:
    """An event published with JetStream is a request for the stream's ack; a FastStream handler would answer it
    with an empty body, and whichever answer comes first is what the publisher reads (it failed the outbox relay
    in CI). ``event_subscriber`` never answers."""
    from stockade.runtime.bus import connect_broker, event_subscriber, make_broker, stop_broker

    subject = f"bus.test.{uuid.uuid4().hex}.happened.v1"
    settings = NatsSettings(url=nats_url)
    broker = make_broker(settings, name="listener")
    heard: list[bytes] = []

    @event_subscriber(broker, subject)
    async def on_event(body: bytes) -> None:
        heard.append(body)

    await connect_broker(broker, settings)
    await broker.start()
    await sync_with_server(broker.connection)  # else the plain request below can find no responders
    client = await nats.connect(nats_url)
    try:
        with pytest.raises(nats.errors.TimeoutError):  # a plain request: heard, never answered
            await client.request(subject, b"a request", timeout=0.5)
        js = client.jetstream()
        stream = f"BUS_TEST_{uuid.uuid4().hex[:8].upper()}"
        await js.add_stream(name=stream, subjects=[subject])
        for i in range(50):  # each publish must read the stream's ack, never the handler's silence
            ack = await js.publish(subject, f"event {i}".encode(), timeout=5)
            assert ack.stream == stream and ack.seq == i + 1
        deadline = time.monotonic() + 20
        while len(heard) < 51:
            assert time.monotonic() < deadline, f"heard {len(heard)} of 51"
            await asyncio.sleep(0.01)
        assert len(heard) == 51
        await js.delete_stream(stream)
    finally:
        await client.close()
        await stop_broker(broker, 5)
