"""NATS faults in the middle of real work: a guardrail run flush, a trust-broker burst, a prompt publish.

Each scenario runs the real service code in this process against real nats-server processes and calls
``fault()`` (an async callable: kill a server, restart it, ...) once a third of the work is done, without
pausing the work. It then waits for the work to finish and returns what reached its destination, counted by
id, so the test can assert that nothing was lost or duplicated. The services are never restarted: what
recovers, recovers by itself. ``Who`` gives the NATS user of each role (None: a server without accounts).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nats
import pytest
import uvicorn
import yaml

from stockade.contracts.nats_sync import sync_with_server

Fault = Callable[[], Awaitable[None]]
Who = Callable[[str], dict[str, Any]]  # role -> nats.connect() options (user, password, inbox_prefix)


def nobody(role: str) -> dict[str, Any]:
    return {}


async def until(check: Callable[[], Any], within_s: float, what: str, interval: float = 0.1) -> Any:
    """Poll an (async or sync) check until it returns something truthy; fail naming ``what``."""
    deadline = asyncio.get_running_loop().time() + within_s
    while True:
        value = check()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"not reached within {within_s} s: {what}")
        await asyncio.sleep(interval)


# -- (a) a guardrail run flush: library -> guardrail-ingest -> JetStream -> ClickHouse (chdb) --------------------


@dataclass
class FlushReport:
    sent: int
    stored_ids: dict[str, int]  # event_id -> rows after FINAL (the documented read): 1 each when exactly once
    raw_rows: int  # before FINAL: a batch redelivered after the fault is written again and folded on read
    unsent_after_fault: int  # events not yet flushed when fault() returned: > 0, the fault hit the flush


@asynccontextmanager
async def served_ingest(settings: Any) -> AsyncIterator[str]:
    from stockade.guardrail_ingest.main import create_app

    port = settings.http.port
    server = uvicorn.Server(uvicorn.Config(create_app(settings), port=port, log_config=None, lifespan="on"))
    task = asyncio.create_task(server.serve())
    try:
        await until(lambda: server.started or task.done(), 20, "guardrail-ingest started", 0.025)
        if task.done():
            task.result()
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, timeout=30)


async def flush_through(
    nats_url: str,
    dsn: str,
    client: Any,
    table: str,
    fault: Fault,
    *,
    who: Who = nobody,
    events: int = 3000,
    replicas: int = 1,
) -> FlushReport:
    """One run of ``events`` events flushed by the library (``BackendGuardrailSink``, 100 per batch) while
    ``fault()`` happens; a flush that fails is retried with the events not sent yet, as the library keeps them."""
    from stockade.guardrail_ingest.settings import (
        GuardrailIngestSettings,
        IngestSettings,
        SinkSettings,
        StreamSettings,
    )
    from stockade.guardrails.events import EventKind, GuardrailEvent
    from stockade.guardrails.storage.config import StorageConfig
    from stockade.guardrails.storage.sink import BackendGuardrailSink
    from stockade.guardrails.storage.wire import RunInfo
    from stockade.runtime.settings import DatabaseSettings, HttpSettings, NatsSettings
    from stockade.testing.ports import free_port

    settings = GuardrailIngestSettings(
        nats=NatsSettings(
            url=nats_url, startup_wait_s=10, stream_replicas=replicas, **_auth(who("guardrail-ingest"))
        ),
        db=DatabaseSettings(url="sqlite+aiosqlite:///:memory:"),
        http=HttpSettings(port=free_port()),
        sink=SinkSettings(kind="clickhouse", url=dsn, table=table),
        ingest=IngestSettings(auth="open"),  # NATS faults, not keys (tests/e2e/test_ingest_keys.py)
        jetstream=StreamSettings(workers=2, ack_wait_s=5, fetch_timeout_s=0.3, retry_delay_s=0.3),
    )
    run = RunInfo(run_id=f"run-{uuid.uuid4().hex[:12]}", project_id="faults")
    all_events = [
        GuardrailEvent(kind=EventKind.CHECK, name="pii", run_id=run.run_id, payload={"i": i})
        for i in range(events)
    ]
    chunks = [all_events[i : i + 100] for i in range(0, events, 100)]
    done = 0
    async with served_ingest(settings) as base:
        sink = BackendGuardrailSink(
            StorageConfig(enabled=True, backend_url=base, batch_size=100, max_retries=2, backoff_max_s=0.5)
        )

        async def flush() -> None:
            nonlocal done
            for chunk in chunks:
                rest = chunk
                while rest:
                    outcome = await sink.send(run, rest)
                    assert outcome.retryable and outcome.rejected == 0, outcome.error  # refused: fail now
                    rest = rest[outcome.sent :]
                    if rest:
                        await asyncio.sleep(0.2)
                done += len(chunk)

        sending = asyncio.create_task(flush())
        await until(lambda: done >= events // 3 or sending.done(), 60, "a third of the run flushed")
        await fault()
        unsent_after_fault = events - done
        await asyncio.wait_for(sending, timeout=90)

        def stored() -> dict[str, int]:
            if not int(client.command(f"EXISTS TABLE {table}")):
                return {}
            rows = client.query(f"SELECT event_id, count() FROM {table} FINAL GROUP BY event_id").result_rows
            return {str(event_id): int(n) for event_id, n in rows}

        async def all_stored() -> dict[str, int] | None:
            ids = await asyncio.to_thread(stored)
            return ids if len(ids) >= events else None

        ids = await until(all_stored, 60, f"{events} events stored", 0.3)
        raw = int(await asyncio.to_thread(client.command, f"SELECT count() FROM {table}"))
    sent_ids = {e.event_id for e in all_events}
    assert set(ids) == sent_ids
    return FlushReport(sent=done, stored_ids=ids, raw_rows=raw, unsent_after_fault=unsent_after_fault)


def _auth(options: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in options.items() if k in ("user", "password")}


# -- (b) a trust-broker burst: agents -> trust.submit -> broker (JetStream nonces) -> agent inbox ----------------

AGENT_SECRETS = {"planner": "p" * 32, "executor": "e" * 32}


def trust_yaml(directory: Path) -> Path:
    agents = [
        {"id": "planner", "trust": "trusted", "capabilities": ["summarize"]},
        {"id": "executor", "trust": "restricted", "capabilities": ["summarize"]},
    ]
    for agent in agents:
        agent["keys"] = [{"id": "k1", "secret": AGENT_SECRETS[str(agent["id"])]}]
    document = {
        "guardrails": {
            "trust": {
                "policy": {"min_sender_trust": "restricted"},
                "attestation": {"freshness_window_s": 60, "clock_skew_s": 2},
                "agents": agents,
            }
        }
    }
    path = directory / "trust.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


@dataclass
class BurstReport:
    outcomes: dict[str, str]  # nonce -> delivered | replay-on-retry (an earlier attempt was verified)
    senders: int  # messages in flight at any moment
    inbox: list[str]  # nonces in the receiver's inbox, in arrival order (duplicates would show)
    retries: int
    replays_accepted: int  # every envelope sent again after the burst: must all be refused
    after: str  # the decision on one new message after the burst (the broker recovered: "delivered")
    errors: list[str] = field(default_factory=list)


async def burst_through(
    nats_url: str,
    directory: Path,
    fault: Fault,
    *,
    who: Who = nobody,
    messages: int = 600,
    senders: int = 16,
    replicas: int = 1,
    recipient_url: Callable[[], Awaitable[str]] | None = None,
    broker_url: Callable[[], Awaitable[str]] | None = None,
) -> BurstReport:
    """``messages`` signed messages planner -> executor through one real trust-broker while ``fault()`` happens.

    ``recipient_url``, called once the trust-broker has started, picks the server the executor connects to (by
    default any of ``nats_url``): the inbox is core NATS, so a recipient whose own server dies loses what was
    routed to it while it reconnects; a fault that is not about the recipient keeps it on a surviving node.
    ``broker_url`` does the same for the trust-broker: in a cluster, a delivery the broker has handed to its own
    server is still on the route to the recipient's server when the broker's server dies, and is lost there after
    the sender was told "delivered" (at most once, docs/trust.md). The broker starts on ``nats_url`` (it creates
    the nonce bucket, so the bucket's leader is known only then) and is restarted on ``broker_url()``.

    A sender retries the same envelope (same nonce) until it gets a decision: after a timeout, when no broker
    answers, or when the broker could not establish the replay status (``verification_unavailable``, fail
    closed). A ``replay`` answer to a retry means an earlier attempt was verified and delivered.
    """
    from stockade.contracts import subjects
    from stockade.guardrails.trust import AttestationVerifier, KeyRing, trust_config_from_path
    from stockade.runtime.settings import HttpSettings, NatsSettings
    from stockade.testing.ports import free_port
    from stockade.trust_broker import wire
    from stockade.trust_broker.main import create_app
    from stockade.trust_broker.settings import TrustBrokerSettings

    config_path = trust_yaml(directory)
    cfg = trust_config_from_path(config_path)
    verifier = AttestationVerifier(KeyRing.from_config(cfg), config=cfg.attestation)

    def broker_on(url: str) -> Any:
        return create_app(
            TrustBrokerSettings(
                config_path=config_path,
                http=HttpSettings(port=free_port()),
                nats=NatsSettings(url=url, stream_replicas=replicas, **_auth(who("trust-broker"))),
            )
        )

    broker = broker_on(nats_url)
    errors: list[str] = []

    async def on_error(exc: Exception) -> None:
        errors.append(f"{type(exc).__name__}: {exc}")

    def connect(role: str, url: str = nats_url) -> Any:
        return nats.connect(
            url.split(","),
            max_reconnect_attempts=-1,
            reconnect_time_wait=0.2,
            connect_timeout=2,
            error_cb=on_error,
            **who(role),
        )

    await broker.start()
    if broker_url is not None:  # the bucket exists now: move the broker to the node the fault spares
        await broker.stop()
        broker = broker_on(await broker_url())
        await broker.start()
    planner = await connect("planner")
    executor = await connect("executor", await recipient_url() if recipient_url else nats_url)
    inbox: list[str] = []

    async def receive(msg: Any) -> None:
        inbox.append((msg.headers or {}).get(wire.NONCE, "?"))

    await executor.subscribe(subjects.agent_inbox("executor"), cb=receive)
    await sync_with_server(executor)
    envelopes = [
        verifier.sign("planner", "executor", f"task {i}".encode(), capability="summarize")
        for i in range(messages)
    ]
    outcomes: dict[str, str] = {}
    retries = 0

    async def submit(envelope: Any, payload: bytes) -> dict[str, Any] | None:
        # As AgentBus.send(): the broker answers on agent.planner.reply.<token> (never a subject we name).
        token = uuid.uuid4().hex
        answer_on = subjects.agent_reply("planner", token)
        try:
            sub = await planner.subscribe(answer_on, max_msgs=1)
            await planner.publish(
                subjects.trust_submit("executor"),
                payload,
                reply=answer_on,
                headers={wire.ATTESTATION: envelope.to_json(), wire.REPLY_TOKEN: token},
            )
            reply = await sub.next_msg(timeout=2)
        except Exception:  # timeout, reconnecting: the outcome is unknown, send again
            return None
        if not reply.data and (reply.headers or {}).get("Status") == "503":
            # no broker subscribed at that moment (it is reconnecting after the kill): the server itself answers
            # the reply subject with an empty 503 status message, as AgentBus.send() handles too; send again
            return None
        answer: dict[str, Any] = json.loads(reply.data)
        return answer

    async def send(envelope: Any, payload: bytes) -> None:
        nonlocal retries
        attempt = 0
        while True:
            attempt += 1
            answer = await submit(envelope, payload)
            if answer is not None and answer["status"] == "delivered":
                outcomes[envelope.nonce] = "delivered"
                return
            if answer is not None and answer.get("reason") == "replay" and attempt > 1:
                outcomes[envelope.nonce] = "replay-on-retry"
                return
            if answer is not None and answer.get("reason") != "verification_unavailable":
                raise AssertionError(f"message refused: {answer}")
            retries += 1
            await asyncio.sleep(0.1)

    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(messages):
        queue.put_nowait(i)

    async def sender() -> None:
        while not queue.empty():
            i = queue.get_nowait()
            await send(envelopes[i], f"task {i}".encode())

    try:
        tasks = [asyncio.create_task(sender()) for _ in range(senders)]
        await until(lambda: len(outcomes) >= messages // 3, 60, "a third of the burst decided")
        await fault()
        await asyncio.wait_for(asyncio.gather(*tasks), timeout=90)
        with contextlib.suppress(AssertionError):  # the test compares the inbox with the outcomes
            await until(lambda: set(inbox) >= set(outcomes), 10, "every verified message in the inbox")
        replays = 0
        for i, envelope in enumerate(envelopes):  # the nonces outlived the fault: every replay is refused
            answer = None
            while answer is None:
                answer = await submit(envelope, f"task {i}".encode())
            replays += answer["status"] == "delivered"
        fresh = verifier.sign("planner", "executor", b"after", capability="summarize")
        await send(fresh, b"after")  # retried like the others until the broker decides
        after = outcomes.pop(fresh.nonce)
        await until(
            lambda: fresh.nonce in inbox, 10, f"the message sent after the burst ({after}) in the inbox"
        )
        await asyncio.sleep(0.3)  # late duplicates would arrive now
        return BurstReport(
            outcomes,
            senders,
            [n for n in inbox if n != fresh.nonce],
            retries,
            replays,
            after,
            errors,
        )
    finally:
        for nc in (planner, executor):
            await nc.close()
        await broker.stop()


# -- (c) a prompt publish: prompt-api's outbox relay -> JetStream stream PROMPTS --------------------------------


@dataclass
class PublishReport:
    enqueued: list[str]
    in_stream: dict[str, int]  # event_id -> messages in PROMPTS
    unsent: int


async def publish_through(
    nats_url: str, directory: Path, fault: Fault, *, who: Who = nobody, events: int = 300
) -> PublishReport:
    """``events`` prompt publishes committed to prompt-api's outbox (SQLite, migrated) and relayed by its
    ``OutboxRelay`` while ``fault()`` happens; then every message of the PROMPTS stream, by event id."""
    from sqlalchemy import func, select

    from stockade.contracts import PromptPublished
    from stockade.contracts.subjects import PROMPT_PUBLISHED_WILDCARD
    from stockade.prompt_api.migrate import upgrade
    from stockade.prompt_api.tables import OutboxEvent
    from stockade.runtime.db import create_engine, session_factory
    from stockade.runtime.nats import LazyNatsConnection
    from stockade.runtime.outbox import OutboxRelay, enqueue
    from stockade.runtime.settings import NatsSettings, OutboxSettings

    url = f"sqlite+aiosqlite:///{directory / 'prompt-api.db'}"
    await asyncio.to_thread(upgrade, url)
    engine = create_engine(url)
    sessions = session_factory(engine)
    # a connection opened on first use, re-opened after a failure (prompt-api's own is its bus's)
    connection = LazyNatsConnection(NatsSettings(url=nats_url, **_auth(who("prompt-api"))), name="prompt-api")
    relay = OutboxRelay(
        sessions, OutboxEvent, connection, OutboxSettings(enabled=True, interval_s=0.2, batch_size=20)
    )
    enqueued: list[str] = []
    relay.start()
    try:

        async def publish(i: int) -> None:
            event = PromptPublished(
                project_id="faults", prompt_name=f"p{i}", version=1, sha256="ab" * 32, published_by="u"
            )
            async with sessions() as session:
                enqueue(session, OutboxEvent, event)
                await session.commit()
            enqueued.append(str(event.event_id))
            relay.wake()

        async def publisher() -> None:
            for i in range(events):
                await publish(i)
                await asyncio.sleep(0.01)

        publishing = asyncio.create_task(publisher())
        await until(lambda: relay.sent >= events // 3, 60, "a third of the publishes relayed")
        await fault()
        await asyncio.wait_for(publishing, timeout=60)

        async def unsent() -> int:
            async with sessions() as session:
                count = await session.scalar(
                    select(func.count()).select_from(OutboxEvent).where(OutboxEvent.sent_at.is_(None))
                )
            return int(count or 0)

        await until(lambda: _zero(unsent()), 60, "every outbox row sent", 0.2)
        in_stream: dict[str, int] = {}
        nc = await nats.connect(nats_url.split(","), **who("observer"))
        try:
            js = nc.jetstream()
            sub = await js.subscribe(PROMPT_PUBLISHED_WILDCARD, ordered_consumer=True)
            pending = (await js.stream_info("PROMPTS")).state.messages
            for _ in range(pending):
                msg = await sub.next_msg(timeout=10)
                event_id = json.loads(msg.data)["event_id"]
                in_stream[event_id] = in_stream.get(event_id, 0) + 1
            await sub.unsubscribe()
        finally:
            await nc.close()
        return PublishReport(enqueued, in_stream, await unsent())
    finally:
        await relay.stop(5)
        await connection.close()
        await engine.dispose()


async def _zero(count: Awaitable[int]) -> bool:
    return await count == 0


class Scenarios:
    """The scenarios above, as a fixture (tests cannot import conftest under --import-mode=importlib)."""

    flush_through = staticmethod(flush_through)
    burst_through = staticmethod(burst_through)
    publish_through = staticmethod(publish_through)
    until = staticmethod(until)


@pytest.fixture
def scenarios() -> type[Scenarios]:
    return Scenarios
