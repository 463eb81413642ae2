"""Every accepted event is stored exactly once, against the real stores of the stockade.testing fixtures.

The worker-killed case: a sink worker writes half of a batch and is cancelled before it acknowledges; JetStream
redelivers the batch after ack_wait to another worker on the same durable consumer, which writes it again. The
idempotent writes (Mongo unique index, DynamoDB hash key, ClickHouse: ids of a redelivered batch looked up through
the primary key, ReplacingMergeTree + insert tokens otherwise) leave each event stored once as a reader sees it.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import nats
import pytest
import pytest_asyncio

from stockade.contracts import GuardrailEventsReceived
from stockade.guardrail_ingest.jetstream import ensure_stream, publish_batch
from stockade.guardrail_ingest.settings import StreamSettings
from stockade.guardrail_ingest.sinks.base import EventSink, SinkError, WriteOutcome
from stockade.guardrail_ingest.worker import SinkWorker

pytestmark = [pytest.mark.nats]

STREAM_SETTINGS = StreamSettings(ack_wait_s=1.0, fetch_timeout_s=0.3, retry_delay_s=0.2)


@dataclass
class Store:
    sink: EventSink
    ids: Callable[[], Any]  # -> list of stored event_ids (one entry per stored row/document/item)
    read: Callable[
        [], Any
    ]  # -> event_ids as a reader sees them (ClickHouse: FINAL, the README's reader rule)


async def _mongo(request: pytest.FixtureRequest, name: str) -> AsyncIterator[Store]:
    from stockade.guardrail_ingest.sinks.mongodb import MongoSink

    sink = MongoSink(request.getfixturevalue("mongodb_url"), name, timeout_s=5)

    async def ids() -> list[str]:
        return [d["event_id"] async for d in sink.collection.find({}, {"event_id": 1})]

    yield Store(sink, ids, ids)
    await sink.collection.drop()
    await sink.aclose()


async def _dynamo(
    request: pytest.FixtureRequest, name: str, conditional: bool = False
) -> AsyncIterator[Store]:
    from stockade.guardrail_ingest.sinks.dynamodb import DynamoSink

    client = request.getfixturevalue("dynamodb_client")
    mp = request.getfixturevalue("monkeypatch")
    for var, value in {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"}.items():
        mp.setenv(var, value)
    sink = DynamoSink(
        request.getfixturevalue("dynamodb_endpoint"), name, region="us-east-1", conditional=conditional
    )

    async def ids() -> list[str]:
        items = await asyncio.to_thread(client.scan, TableName=name, ProjectionExpression="event_id")
        return [i["event_id"]["S"] for i in items["Items"]]

    yield Store(sink, ids, ids)
    await asyncio.to_thread(client.delete_table, TableName=name)
    await sink.aclose()


async def _clickhouse(request: pytest.FixtureRequest, name: str) -> AsyncIterator[Store]:
    from stockade.guardrail_ingest.sinks.clickhouse import ClickHouseSink

    client = request.getfixturevalue("clickhouse_client")
    sink = ClickHouseSink(request.getfixturevalue("clickhouse_dsn"), name)

    async def ids() -> list[str]:
        # No FINAL: physical rows, so a duplicate insert would show even before a merge.
        rows = await asyncio.to_thread(lambda: client.query(f"SELECT event_id FROM {name}").result_rows)
        return [r[0] for r in rows]

    async def read() -> list[str]:
        rows = await asyncio.to_thread(lambda: client.query(f"SELECT event_id FROM {name} FINAL").result_rows)
        return [r[0] for r in rows]

    yield Store(sink, ids, read)
    await asyncio.to_thread(client.command, f"DROP TABLE IF EXISTS {name}")
    await sink.aclose()


async def _dynamo_conditional(request: pytest.FixtureRequest, name: str) -> AsyncIterator[Store]:
    async for store in _dynamo(request, name, conditional=True):
        yield store


FACTORIES = {
    "mongodb": _mongo,
    "dynamodb": _dynamo,
    "dynamodb-conditional": _dynamo_conditional,
    "clickhouse": _clickhouse,
}


@pytest_asyncio.fixture(
    params=[
        pytest.param("clickhouse", marks=pytest.mark.clickhouse),
        pytest.param("dynamodb", marks=pytest.mark.dynamodb),
        pytest.param("dynamodb-conditional", marks=pytest.mark.dynamodb),
        pytest.param("mongodb", marks=pytest.mark.mongo),
    ]
)
async def store(request: pytest.FixtureRequest, unique_name: Callable[[str], str]) -> AsyncIterator[Store]:
    async for s in FACTORIES[request.param](request, unique_name("grev")):
        await s.sink.ensure_schema()
        yield s


@pytest_asyncio.fixture
async def js(fresh_nats_url: str) -> AsyncIterator[Any]:
    nc = await nats.connect(fresh_nats_url)
    js = nc.jetstream()
    await ensure_stream(js, STREAM_SETTINGS)
    yield js
    await nc.close()


def _records(n: int, run_id: str = "run-x") -> list[dict[str, Any]]:
    return [
        {
            "event_id": str(uuid.uuid4()),
            "run_id": run_id,
            "kind": "tool_authorization",
            "name": "tool_authorization",
            "occurred_at": "2026-11-22T12:00:00.123456+00:00",
            "session_id": "s-1",
            "action": "block",
            "payload": {"tool": "payments.transfer", "reason": "denylisted", "score": 0.5},
            "project_id": "proj-1",
            "agent_id": "planner",
            "environment": None,
            "prompt_name": None,
            "prompt_version": None,
            "correlation_id": "job-7",
            "labels": {"team": "risk"},
            "received_at": "2026-11-22T12:00:01+00:00",
        }
        for _ in range(n)
    ]


async def _publish(js: Any, records: list[dict[str, Any]], batch_id: uuid.UUID | None = None) -> None:
    message = GuardrailEventsReceived(event_id=batch_id or uuid.uuid4(), db_type="x", events=records)
    await publish_batch(js, STREAM_SETTINGS, message, timeout_s=5)


class HalfThenDie:
    """Writes the first half of the first batch it gets, then hangs until its worker task is cancelled."""

    def __init__(self, real: EventSink) -> None:
        self.real, self.kind = real, real.kind
        self.half_written = asyncio.Event()

    async def ensure_schema(self) -> None:
        await self.real.ensure_schema()

    async def write(self, records: list[dict[str, Any]], *, maybe_stored: bool = False) -> WriteOutcome:
        await self.real.write(records[: len(records) // 2])
        self.half_written.set()
        await asyncio.Event().wait()  # the "process" dies here: no ack is ever sent
        raise AssertionError("unreachable")

    async def aclose(self) -> None:
        return None


async def _until(check: Callable[[], Any], within_s: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + within_s
    while not await check():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.1)


async def _run_worker(worker: SinkWorker) -> asyncio.Task[None]:
    return asyncio.create_task(worker.run())


async def _stop(worker: SinkWorker, task: asyncio.Task[None]) -> None:
    worker.stop()
    await asyncio.wait_for(task, timeout=10)


async def test_worker_killed_mid_batch_then_redelivery_stores_each_event_once(store: Store, js: Any) -> None:
    records = _records(6 if store.sink.kind == "mongodb" else 20)
    await _publish(js, records)

    dying = HalfThenDie(store.sink)
    first = SinkWorker(js, dying, STREAM_SETTINGS)
    first_task = await _run_worker(first)
    await asyncio.wait_for(dying.half_written.wait(), timeout=20)
    first_task.cancel()
    await asyncio.gather(first_task, return_exceptions=True)
    assert len(await store.ids()) == len(records) // 2
    assert first.stats.batches == 0  # nothing acknowledged

    second = SinkWorker(js, store.sink, STREAM_SETTINGS)
    second_task = await _run_worker(second)

    async def acked() -> bool:
        return second.stats.batches == 1

    await _until(acked)
    await _stop(second, second_task)
    stored = await store.ids()
    assert sorted(stored) == sorted(r["event_id"] for r in records)  # all, and none twice
    assert (second.stats.inserted, second.stats.duplicates) == (
        len(records) - len(records) // 2,
        len(records) // 2,
    )


async def test_same_events_in_a_new_batch_are_not_stored_again(store: Store, js: Any) -> None:
    records = _records(4)
    await _publish(js, records)
    await _publish(js, records[1:3] + _records(1))  # a re-sent subset plus one new event, other batch id
    worker = SinkWorker(js, store.sink, STREAM_SETTINGS)
    task = await _run_worker(worker)

    async def both() -> bool:
        return worker.stats.batches == 2

    await _until(both)
    await _stop(worker, task)
    # A first delivery of already stored events (a client resending after JetStream's duplicate window): stores
    # that write without looking first may hold a second physical copy, which no reader sees.
    assert len(await store.read()) == 5 and len(set(await store.read())) == 5
    if store.sink.kind == "mongodb" or getattr(store.sink, "conditional", False):
        assert worker.stats.duplicates == 2  # these stores know on every write


class FailsOnce:
    def __init__(self, real: EventSink) -> None:
        self.real, self.kind, self.calls = real, real.kind, 0

    async def ensure_schema(self) -> None:
        await self.real.ensure_schema()

    async def write(self, records: list[dict[str, Any]], *, maybe_stored: bool = False) -> WriteOutcome:
        self.calls += 1
        if self.calls == 1:
            raise SinkError("store timed out")
        return await self.real.write(records, maybe_stored=maybe_stored)

    async def aclose(self) -> None:
        return None


@pytest.mark.clickhouse
@pytest.mark.parametrize("store", ["clickhouse"], indirect=True)
async def test_store_error_naks_and_the_batch_is_retried(store: Store, js: Any) -> None:
    records = _records(3)
    await _publish(js, records)
    flaky = FailsOnce(store.sink)
    worker = SinkWorker(js, flaky, STREAM_SETTINGS)
    task = await _run_worker(worker)

    async def stored() -> bool:
        return worker.stats.batches == 1

    await _until(stored)
    await _stop(worker, task)
    assert worker.stats.store_errors == 1 and worker.stats.last_error == "store timed out"
    assert sorted(await store.ids()) == sorted(r["event_id"] for r in records)


class Slow:
    """Takes ``delay_s`` before each write (a large insert, a slow store); counts the writes."""

    def __init__(self, real: EventSink, delay_s: float) -> None:
        self.real, self.kind, self.delay_s, self.calls = real, real.kind, delay_s, 0

    async def ensure_schema(self) -> None:
        await self.real.ensure_schema()

    async def write(self, records: list[dict[str, Any]], *, maybe_stored: bool = False) -> WriteOutcome:
        self.calls += 1
        await asyncio.sleep(self.delay_s)
        return await self.real.write(records, maybe_stored=maybe_stored)

    async def aclose(self) -> None:
        return None


@pytest.mark.mongo
@pytest.mark.parametrize("store", ["mongodb"], indirect=True)
async def test_a_write_slower_than_ack_wait_is_not_redelivered_to_another_worker(
    store: Store, js: Any
) -> None:
    """Two workers on the consumer; the first write takes 2.5 times ack_wait. The worker marks its batch in
    progress meanwhile, so the second worker never gets it: one write, no duplicate work."""
    settings = StreamSettings(ack_wait_s=2.0, fetch_timeout_s=0.3, retry_delay_s=0.2)
    records = _records(3)
    await _publish(js, records)
    slow = Slow(store.sink, delay_s=settings.ack_wait_s * 2.5)
    workers = [SinkWorker(js, slow, settings) for _ in range(2)]
    tasks = [await _run_worker(w) for w in workers]

    async def stored() -> bool:
        return sum(w.stats.batches for w in workers) == 1

    await _until(stored)
    await asyncio.sleep(settings.ack_wait_s + 0.5)  # a redelivered copy would be in a write by now
    for worker, task in zip(workers, tasks, strict=True):
        await _stop(worker, task)
    assert slow.calls == 1
    assert sum(w.stats.duplicates for w in workers) == 0
    assert sorted(await store.ids()) == sorted(r["event_id"] for r in records)


@pytest.mark.clickhouse
@pytest.mark.parametrize("store", ["clickhouse"], indirect=True)
async def test_undecodable_message_is_terminated_not_retried(store: Store, js: Any) -> None:
    await js.publish(STREAM_SETTINGS.subject, b"not json", stream=STREAM_SETTINGS.stream)
    records = _records(2)
    await _publish(js, records)
    worker = SinkWorker(js, store.sink, STREAM_SETTINGS)
    task = await _run_worker(worker)

    async def done() -> bool:
        return worker.stats.batches == 1 and worker.stats.poison == 1

    await _until(done)
    await asyncio.sleep(1.5)  # past ack_wait: a poison message that was not terminated would come back
    await _stop(worker, task)
    assert worker.stats.poison == 1 and len(await store.ids()) == 2


async def test_redelivered_batch_written_with_new_ones_shows_once_to_readers(store: Store, js: Any) -> None:
    """A worker stored a whole batch but died before its ack; the batch comes back in the same fetch as a new
    one, so the two are written together (an insert of other rows than the first, with another insert token).
    Each event is stored once, even in physical rows: the redelivered batch's ids are looked up first."""
    first_batch, second_batch = _records(8, run_id="run-a"), _records(4, run_id="run-b")
    await _publish(js, first_batch)
    sub = await js.pull_subscribe(
        STREAM_SETTINGS.subject, durable=STREAM_SETTINGS.durable, stream=STREAM_SETTINGS.stream
    )
    (delivered,) = await sub.fetch(1, timeout=5)
    await store.sink.write(first_batch)  # stored, then the worker "dies": no ack
    await delivered.nak()  # what ack_wait would do, without waiting for it
    await _publish(js, second_batch)
    msgs: list[Any] = []
    while len(msgs) < 2:
        msgs += await sub.fetch(2 - len(msgs), timeout=5)
    assert sorted(m.metadata.num_delivered for m in msgs) == [1, 2]
    worker = SinkWorker(js, store.sink, STREAM_SETTINGS)
    await worker.handle_many(msgs)
    await sub.unsubscribe()

    expected = sorted(r["event_id"] for r in first_batch + second_batch)
    assert sorted(await store.read()) == expected
    assert sorted(await store.ids()) == expected  # not even a second physical copy
    assert (worker.stats.batches, worker.stats.inserted, worker.stats.duplicates) == (2, 4, 8)


@pytest.mark.clickhouse
@pytest.mark.parametrize("store", ["clickhouse"], indirect=True)
async def test_clickhouse_racing_writers_are_deduplicated_by_the_insert_token(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two workers on one redelivered batch that both looked before either inserted: the server drops the second
    identical insert."""
    client = store.sink._connected()  # type: ignore[attr-defined]

    class NothingStoredYet:
        result_rows: list[Any] = []

    monkeypatch.setattr(client, "query", lambda *a, **k: NothingStoredYet())
    records = _records(5)
    await store.sink.write(records, maybe_stored=True)
    await store.sink.write(records, maybe_stored=True)
    monkeypatch.undo()
    assert sorted(await store.ids()) == sorted(r["event_id"] for r in records)


@pytest.mark.clickhouse
@pytest.mark.parametrize("store", ["clickhouse"], indirect=True)
async def test_clickhouse_copy_past_every_guard_is_folded_for_readers(store: Store) -> None:
    """The same events inserted twice in different blocks on first deliveries (a resend after the duplicate
    window): two physical rows until a merge, one row per event for a reader using FINAL, then one after merge."""
    records = _records(6, run_id="run-r")
    await store.sink.write(records)
    await store.sink.write(records[:3] + _records(1, run_id="run-r"))  # another block: another token
    assert len(await store.ids()) == 10  # the sink did not look (no scan on a first delivery)
    assert len(await store.read()) == 7 and len(set(await store.read())) == 7
    client = store.sink._connected()  # type: ignore[attr-defined]
    table = store.sink.table  # type: ignore[attr-defined]
    await asyncio.to_thread(client.command, f"OPTIMIZE TABLE {table} FINAL")
    assert len(await store.ids()) == 7


@pytest.mark.clickhouse
@pytest.mark.parametrize("store", ["clickhouse"], indirect=True)
async def test_clickhouse_redelivered_fetch_of_many_events_is_looked_up_in_chunks(store: Store) -> None:
    """16 batches of 1000 events come back together: their ids alone are more query text than ClickHouse parses
    in one query (256 KiB), which used to fail the write on every redelivery, forever."""
    records = _records(7000, run_id="run-big")
    for record in records:
        record["event_id"] = f"{record['event_id']}-{'x' * 20}"
    await store.sink.write(records[:3500])
    outcome = await store.sink.write(records, maybe_stored=True)
    assert (outcome.inserted, outcome.duplicates) == (3500, 3500)
    assert len(await store.ids()) == 7000
