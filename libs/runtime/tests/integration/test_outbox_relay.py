"""The shared outbox relay against a real database (SQLite file, PostgreSQL) and real nats-servers.

Each test that reads streams gets its own nats-server (``nats_server_factory``), so no other test's events are in
the streams it counts.
"""

import asyncio
import json
import logging
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import nats
import pytest
from sqlalchemy import select, update
from sqlalchemy.orm import DeclarativeBase

from stockade.contracts import ModelChanged, PromptPublished
from stockade.contracts.subjects import MODEL_CHANGED, PROMPT_PUBLISHED_WILDCARD
from stockade.runtime.db import create_engine, session_factory
from stockade.runtime.db_types import utcnow
from stockade.runtime.nats import LazyNatsConnection
from stockade.runtime.outbox import OutboxColumns, OutboxRelay, enqueue, given_connection
from stockade.runtime.settings import NatsSettings, OutboxSettings
from stockade.testing.nats import find_nats_server, read_server_info
from stockade.testing.ports import wait_until
from stockade.testing.processes import ManagedProcess

pytestmark = pytest.mark.nats
RELAY_LOG = "stockade.runtime.outbox"


class Base(DeclarativeBase):
    pass


class Outbox(OutboxColumns, Base):
    __tablename__ = "test_outbox"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def sessions(request, tmp_path):
    if request.param == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp_path / 'outbox.db'}"
    else:
        url = request.getfixturevalue("postgres_database")
    engine = create_engine(url)
    async with engine.begin() as conn:
        await conn.run_sync(Base.metadata.create_all)
    yield session_factory(engine)
    await engine.dispose()


def model_changed(n: int) -> ModelChanged:
    return ModelChanged(db_config_id="cfg", provider="acme", model_id=f"m-{n}", change="created")


async def add_events(sessions, *events) -> list[str]:
    """Enqueue ``events`` in one committed transaction; returns their ids."""
    async with sessions() as s:
        for event in events:
            enqueue(s, Outbox, event)
        await s.commit()
    return [str(e.event_id) for e in events]


async def rows(sessions) -> list[Outbox]:
    async with sessions() as s:
        return list((await s.execute(select(Outbox).order_by(Outbox.created_at, Outbox.event_id))).scalars())


async def stream_messages(url: str, stream: str, subject: str) -> list[tuple[str, dict]]:
    """(Nats-Msg-Id, body) of every message the stream holds on ``subject``, in stream order."""
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        count = (await js.stream_info(stream)).state.messages
        sub = await js.subscribe(subject, ordered_consumer=True)
        got = []
        try:
            while len(got) < count:
                msg = await sub.next_msg(timeout=5)
                got.append((msg.headers["Nats-Msg-Id"], json.loads(msg.data)))
        finally:
            await sub.unsubscribe()
        return got
    finally:
        await nc.close()


async def wait_for_rows(sessions, done, within_s=20.0) -> list[Outbox]:
    deadline = time.monotonic() + within_s
    while True:
        current = await rows(sessions)
        if done(current):
            return current
        if time.monotonic() > deadline:
            raise AssertionError([(r.subject, r.sent_at, r.attempts) for r in current])
        await asyncio.sleep(0.05)


async def test_rows_are_sent_once_in_order_and_a_resend_is_stored_once(sessions, nats_server_factory):
    server = nats_server_factory()
    nc = await nats.connect(server.url)
    try:
        prompt = PromptPublished(
            project_id="p", prompt_name="n", version=1, sha256="0" * 64, published_by="u"
        )
        ids = await add_events(sessions, model_changed(1), prompt, model_changed(2))
        ids += await add_events(sessions, model_changed(3))
        relay = OutboxRelay(sessions, Outbox, given_connection(nc), OutboxSettings(batch_size=2))
        assert await relay.flush() == 4  # two batches of two
        assert await relay.flush() == 0
        assert relay.sent == 4
        stored = await rows(sessions)
        assert [r.event_id for r in stored] == ids
        assert all(r.sent_at is not None and r.attempts == 0 for r in stored)

        models = await stream_messages(server.url, "MODELS", MODEL_CHANGED)
        assert [msg_id for msg_id, _ in models] == [ids[0], ids[2], ids[3]]
        assert [body["model_id"] for _, body in models] == ["m-1", "m-2", "m-3"]
        assert [body["event_id"] for _, body in models] == [ids[0], ids[2], ids[3]]
        [(prompt_id, prompt_body)] = await stream_messages(server.url, "PROMPTS", PROMPT_PUBLISHED_WILDCARD)
        assert prompt_id == ids[1] == prompt_body["event_id"]

        # A crash between publish and mark (or a second replica) sends a row again: JetStream keeps it once.
        async with sessions() as s:
            await s.execute(update(Outbox).where(Outbox.event_id == ids[0]).values(sent_at=None))
            await s.commit()
        other_replica = OutboxRelay(sessions, Outbox, given_connection(nc), OutboxSettings())
        assert await other_replica.flush() == 1
        assert len(await stream_messages(server.url, "MODELS", MODEL_CHANGED)) == 3
    finally:
        await nc.close()


async def test_rows_wait_while_nats_is_down_and_are_sent_when_it_returns_with_an_empty_store(
    sessions, nats_server_factory, caplog
):
    caplog.set_level(logging.INFO, logger=RELAY_LOG)
    binary = find_nats_server()
    server = nats_server_factory()
    connection = LazyNatsConnection(NatsSettings(url=server.url, connect_timeout_s=0.5), name="outbox-test")
    relay = OutboxRelay(sessions, Outbox, connection, OutboxSettings(interval_s=0.1))
    relay.start()
    replacement = None
    try:
        [first] = await add_events(sessions, model_changed(1))
        relay.wake()
        await wait_for_rows(sessions, lambda rs: all(r.sent_at is not None for r in rs))

        # Only the outage's warnings count: a first connect slower than its 0.5 s on a loaded machine warns too.
        caplog.clear()
        await asyncio.to_thread(server.stop)  # NATS goes away; the relay's client keeps reconnecting
        waiting = await add_events(sessions, model_changed(2), model_changed(3))
        relay.wake()

        def warnings() -> list[logging.LogRecord]:
            return [r for r in caplog.records if r.name == RELAY_LOG and r.levelno == logging.WARNING]

        deadline = time.monotonic() + 20
        while not warnings():
            assert time.monotonic() < deadline, "no warning while NATS was away"
            await asyncio.sleep(0.05)
        await asyncio.sleep(1.0)  # about ten more failed rounds
        assert [r.sent_at is None for r in await rows(sessions)] == [False, True, True]
        [warning] = warnings()  # once, not every round
        assert "not sent yet" in warning.getMessage()

        # A new server on the same port with an empty store: the relay must create the stream again.
        store = Path(tempfile.mkdtemp(prefix="stockade-nats-"))
        replacement = ManagedProcess(
            [str(binary), "-a", "127.0.0.1", "-p", str(server.port), "-js", "-sd", str(store)],
            log_path=store / "nats-server.log",
            die_with_parent=True,
        )
        ready = lambda: read_server_info("127.0.0.1", server.port, 0.5) is not None  # noqa: E731
        assert await asyncio.to_thread(wait_until, ready, timeout=20, interval=0.05)
        final = await wait_for_rows(sessions, lambda rs: all(r.sent_at is not None for r in rs))
        assert final[1].attempts >= 1  # the first publish after the restart found no stream
        models = await stream_messages(server.url, "MODELS", MODEL_CHANGED)
        assert [msg_id for msg_id, _ in models] == waiting  # stored once each, in order; not `first`
        assert any("delivering again" in r.getMessage() for r in caplog.records if r.name == RELAY_LOG)
        assert relay.sent == 3
    finally:
        await relay.stop()
        await connection.close()
        if replacement is not None:
            await asyncio.to_thread(replacement.stop)


async def test_stop_runs_a_last_round_for_what_was_just_committed(sessions, nats_server_factory, caplog):
    server = nats_server_factory()
    nc = await nats.connect(server.url)
    try:
        relay = OutboxRelay(sessions, Outbox, given_connection(nc), OutboxSettings(interval_s=60))
        relay.start()
        await asyncio.sleep(0.2)  # the first round found nothing; the next is a minute away
        ids = await add_events(sessions, model_changed(1))  # committed, no wake()
        started = time.monotonic()
        await relay.stop()
        assert time.monotonic() - started < 5.0 and not relay.running
        assert [(r.event_id, r.sent_at is not None) for r in await rows(sessions)] == [(ids[0], True)]
        assert not any("did not stop" in r.getMessage() for r in caplog.records)
    finally:
        await nc.close()


async def test_stop_is_bounded_when_a_round_hangs(sessions, caplog):
    async def silent(reader, writer):  # accepts TCP and never sends NATS' INFO: the connect hangs
        await reader.read()
        writer.close()

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    connection = LazyNatsConnection(
        NatsSettings(url=f"nats://127.0.0.1:{port}", connect_timeout_s=5), name="t"
    )
    relay = OutboxRelay(sessions, Outbox, connection, OutboxSettings(interval_s=0.1))
    try:
        await add_events(sessions, model_changed(1))
        relay.start()
        await asyncio.sleep(0.3)  # the round is now waiting on the silent server
        started = time.monotonic()
        await relay.stop(timeout_s=0.5)
        assert time.monotonic() - started < 2.0 and not relay.running
        assert any("did not stop within" in r.getMessage() for r in caplog.records if r.name == RELAY_LOG)
        assert [r.sent_at for r in await rows(sessions)] == [None]  # kept for the next start
    finally:
        server.close()
        await connection.close()


async def test_sent_rows_are_pruned_after_the_retention_unsent_rows_never(sessions, nats_server_factory):
    server = nats_server_factory()
    nc = await nats.connect(server.url)
    try:
        old, recent = await add_events(sessions, model_changed(1), model_changed(2))
        keep_an_hour = OutboxRelay(sessions, Outbox, given_connection(nc), OutboxSettings(retain_sent_s=3600))
        assert await keep_an_hour.flush() == 2
        [unsent] = await add_events(sessions, model_changed(3))
        async with sessions() as s:
            await s.execute(
                update(Outbox).where(Outbox.event_id == old).values(sent_at=utcnow() - timedelta(hours=2))
            )
            await s.commit()
        assert await keep_an_hour.prune() == 1
        assert [(r.event_id, r.sent_at is None) for r in await rows(sessions)] == [
            (recent, False),
            (unsent, True),
        ]

        # The running relay prunes by itself (retention 0: in the round that sent them); unsent rows stay.
        no_connection = OutboxRelay(sessions, Outbox, given_connection(None), OutboxSettings(retain_sent_s=0))
        no_connection.start()
        try:
            left = await wait_for_rows(sessions, lambda rs: len(rs) == 1)
        finally:
            await no_connection.stop()
        assert [(r.event_id, r.sent_at) for r in left] == [(unsent, None)]
    finally:
        await nc.close()


async def test_backlog_and_publishes_are_metrics_and_rows_keep_the_trace(sessions, nats_server_factory):
    from prometheus_client import REGISTRY

    from stockade.runtime.tracing import consumer_span

    def metric(name: str) -> float:
        return REGISTRY.get_sample_value(name, {"table": "test_outbox"}) or 0.0

    trace_id = "7bf92f3577b34da6a3ce929d0e0e4736"
    with consumer_span("test", {"traceparent": f"00-{trace_id}-b7ad6b7169203331-01"}):
        await add_events(sessions, model_changed(1), model_changed(2))
    await add_events(sessions, model_changed(3))  # outside a trace: no traceparent
    stored = await rows(sessions)
    assert [r.headers.get("traceparent", "").split("-")[1:2] for r in stored] == [[trace_id], [trace_id], []]

    away = OutboxRelay(sessions, Outbox, given_connection(None), OutboxSettings())
    assert await away.pending() == 3 and metric("stockade_outbox_pending_events") == 3
    server = nats_server_factory()
    nc = await nats.connect(server.url)
    try:
        published = metric("stockade_outbox_published_events_total")
        relay = OutboxRelay(sessions, Outbox, given_connection(nc), OutboxSettings())
        assert await relay.flush() == 3
        assert metric("stockade_outbox_published_events_total") == published + 3
        assert metric("stockade_outbox_pending_events") == 0
        sub = await nc.jetstream().subscribe(MODEL_CHANGED, ordered_consumer=True)
        first = await sub.next_msg(timeout=5)
        await sub.unsubscribe()
        assert first.headers["traceparent"].split("-")[1] == trace_id
    finally:
        await nc.close()
