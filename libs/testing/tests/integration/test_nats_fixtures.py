"""nats_url / nats_client / nats_server_factory against real nats-server processes."""

from __future__ import annotations

import asyncio

import nats
import pytest
from nats.errors import NoServersError
from nats.js.errors import KeyWrongLastSequenceError

from stockade.contracts.nats_sync import sync_with_server


async def test_nats_client_round_trip(nats_client) -> None:
    sub = await nats_client.subscribe("stockade.testing.echo")
    await nats_client.publish("stockade.testing.echo", b"hello")
    msg = await sub.next_msg(timeout=5)
    assert msg.data == b"hello"


async def test_jetstream_stream_and_kv_with_unique_names(nats_client, unique_name) -> None:
    js = nats_client.jetstream()
    stream = unique_name("orders")
    await js.add_stream(name=stream, subjects=[f"{stream}.>"])
    try:
        ack = await js.publish(f"{stream}.created", b"1", headers={"Nats-Msg-Id": "m1"})
        dup = await js.publish(f"{stream}.created", b"1", headers={"Nats-Msg-Id": "m1"})
        assert dup.duplicate and dup.seq == ack.seq
        info = await js.stream_info(stream)
        assert info.state.messages == 1
    finally:
        await js.delete_stream(stream)

    bucket = unique_name("sessions")
    kv = await js.create_key_value(bucket=bucket)
    try:
        await kv.create("k", b"v1")
        with pytest.raises(KeyWrongLastSequenceError):
            await kv.create("k", b"v2")
        assert (await kv.get("k")).value == b"v1"
    finally:
        await js.delete_key_value(bucket)


async def test_nats_server_version_is_known(nats_server_version) -> None:
    assert len(nats_server_version) >= 2
    assert nats_server_version >= (2, 9)


AUTH_CONFIG = """
authorization {
  users = [
    { user: "reader", password: "r-pass", permissions: { publish: { deny: ">" }, subscribe: { allow: "public.>" } } }
    { user: "writer", password: "w-pass" }
  ]
}
"""


async def test_factory_server_enforces_its_config(nats_server_factory) -> None:
    server = nats_server_factory(AUTH_CONFIG)
    assert server.url.endswith(f":{server.port}")
    errors: list[Exception] = []

    async def on_error(exc: Exception) -> None:
        errors.append(exc)

    reader = await nats.connect(
        server.url, user="reader", password="r-pass", error_cb=on_error, allow_reconnect=False
    )
    writer = await nats.connect(server.url, user="writer", password="w-pass", allow_reconnect=False)
    try:
        sub = await reader.subscribe("public.news")
        await sync_with_server(reader)
        # Published until one arrives: once in a clean-clone CI run a single "ok" published right after the
        # server started never reached the subscriber (a fresh server's startup, not the permissions under
        # test: the reader's allowed subject).
        received = None
        for _ in range(25):
            await writer.publish("public.news", b"ok")
            await sync_with_server(writer)
            try:
                received = await sub.next_msg(timeout=0.2)
                break
            except nats.errors.TimeoutError:
                continue
        assert received is not None and received.data == b"ok"
        await reader.publish("public.news", b"denied")
        await sync_with_server(reader)
        for _ in range(100):
            if errors:
                break
            await asyncio.sleep(0.02)
        assert any("permissions violation" in str(e).lower() for e in errors)
        js = writer.jetstream()
        await js.add_stream(name="factory_js", subjects=["factory.>"])
        assert (await js.publish("factory.x", b"1")).seq == 1
    finally:
        await reader.close()
        await writer.close()
    # Last: in nats-py 2.16 a refused connect can disturb clients connected right after it.
    with pytest.raises((NoServersError, nats.errors.Error, OSError)):
        await nats.connect(
            server.url,
            user="reader",
            password="wrong",
            max_reconnect_attempts=0,
            connect_timeout=2,
            allow_reconnect=False,
        )


async def test_factory_server_stop_closes_the_port(nats_server_factory) -> None:
    from stockade.testing.ports import port_open

    server = nats_server_factory()
    assert port_open("127.0.0.1", server.port)
    assert server.version
    server.stop()
    assert not server.process.group_alive()
    assert not port_open("127.0.0.1", server.port)
    server.stop()  # idempotent


async def test_factory_replaces_placeholders(nats_server_factory) -> None:
    config = 'server_name: "stockade_{port}"\njetstream { store_dir: "{store_dir}" }\n'
    server = nats_server_factory(config)
    text = server.config_path.read_text()
    assert f"stockade_{server.port}" in text and str(server.store_dir) in text
    nc = await nats.connect(server.url, allow_reconnect=False)
    try:
        assert nc.connected_server_version.major >= 2
        js = nc.jetstream()
        await js.add_stream(name="placeholders", subjects=["ph.>"])
        await js.publish("ph.a", b"x")
        assert any(server.store_dir.rglob("*.blk"))
    finally:
        await nc.close()
