"""An event a store can never take goes to the dead-letter stream after N deliveries; its batch's other events are
stored exactly once. Real stores of stockade.testing: MongoDB (mongoeco wire server), DynamoDB (moto server),
ClickHouse (chdb), and a real JetStream per test.

Before: pymongo refused the whole insert for one NUL key (nothing stored, the batch redelivered every ack_wait,
forever); DynamoDB refused the whole BatchWriteItem for one item over 400 KB (SinkError, retried forever); a
ClickHouse constraint refused the whole insert block (retried forever).
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
from stockade.guardrail_ingest.dead_letters import list_dead_letters, replay
from stockade.guardrail_ingest.jetstream import ensure_stream, publish_batch
from stockade.guardrail_ingest.settings import StreamSettings
from stockade.guardrail_ingest.sinks.base import EventSink
from stockade.guardrail_ingest.worker import SinkWorker

pytestmark = [pytest.mark.nats]

SETTINGS = StreamSettings(ack_wait_s=1.0, fetch_timeout_s=0.3, retry_delay_s=0.2, dead_letter_after=3)


@dataclass
class Case:
    sink: EventSink
    ids: Callable[[], Any]  # -> stored event_ids, one per row/document/item
    bad_payload: dict[str, Any]  # what this store can never take
    reason: str  # a piece of the store's refusal
    fix: Callable[[], Any] | None = None  # makes the store take it (for the replay)


async def _mongo(request: pytest.FixtureRequest, name: str) -> AsyncIterator[Case]:
    from stockade.guardrail_ingest.sinks.mongodb import MongoSink

    sink = MongoSink(request.getfixturevalue("mongodb_url"), name, timeout_s=5)

    async def ids() -> list[str]:
        return [d["event_id"] async for d in sink.collection.find({}, {"event_id": 1})]

    yield Case(sink, ids, {"tags": {"k\x00ey": 1}}, "must not contain the NULL byte")
    await sink.collection.drop()
    await sink.aclose()


async def _dynamo(request: pytest.FixtureRequest, name: str, conditional: bool) -> AsyncIterator[Case]:
    from stockade.guardrail_ingest.sinks.dynamodb import DynamoSink

    client = request.getfixturevalue("dynamodb_client")
    mp = request.getfixturevalue("monkeypatch")
    mp.setenv("AWS_ACCESS_KEY_ID", "test")
    mp.setenv("AWS_SECRET_ACCESS_KEY", "test")
    endpoint = request.getfixturevalue("dynamodb_endpoint")
    sink = DynamoSink(endpoint, name, region="us-east-1", conditional=conditional)

    async def ids() -> list[str]:
        items = await asyncio.to_thread(client.scan, TableName=name, ProjectionExpression="event_id")
        return [i["event_id"]["S"] for i in items["Items"]]

    yield Case(sink, ids, {"blob": "x" * 410_000}, "Item size has exceeded the maximum allowed size")
    await asyncio.to_thread(client.delete_table, TableName=name)
    await sink.aclose()


async def _clickhouse(request: pytest.FixtureRequest, name: str) -> AsyncIterator[Case]:
    from stockade.guardrail_ingest.sinks.clickhouse import ClickHouseSink

    client = request.getfixturevalue("clickhouse_client")
    sink = ClickHouseSink(request.getfixturevalue("clickhouse_dsn"), name)

    async def ids() -> list[str]:
        rows = await asyncio.to_thread(lambda: client.query(f"SELECT event_id FROM {name}").result_rows)
        return [r[0] for r in rows]

    async def schema_changed_by_hand() -> None:
        await sink.ensure_schema()
        await asyncio.to_thread(
            client.command, f"ALTER TABLE {name} ADD CONSTRAINT small CHECK length(payload) < 10000"
        )

    async def fix() -> None:
        await asyncio.to_thread(client.command, f"ALTER TABLE {name} DROP CONSTRAINT small")

    await schema_changed_by_hand()
    yield Case(sink, ids, {"blob": "x" * 20_000}, "VIOLATED_CONSTRAINT", fix)
    await asyncio.to_thread(client.command, f"DROP TABLE IF EXISTS {name}")
    await sink.aclose()


@pytest_asyncio.fixture(
    params=[
        pytest.param("mongodb", marks=pytest.mark.mongo),
        pytest.param("dynamodb", marks=pytest.mark.dynamodb),
        pytest.param("dynamodb-conditional", marks=pytest.mark.dynamodb),
        pytest.param("clickhouse", marks=pytest.mark.clickhouse),
    ]
)
async def case(request: pytest.FixtureRequest, unique_name: Callable[[str], str]) -> AsyncIterator[Case]:
    name = unique_name("dead")
    if request.param == "mongodb":
        factory = _mongo(request, name)
    elif request.param.startswith("dynamodb"):
        factory = _dynamo(request, name, conditional=request.param.endswith("conditional"))
    else:
        factory = _clickhouse(request, name)
    async for c in factory:
        await c.sink.ensure_schema()
        yield c


@pytest_asyncio.fixture
async def js(fresh_nats_url: str) -> AsyncIterator[Any]:
    nc = await nats.connect(fresh_nats_url)
    js = nc.jetstream()
    await ensure_stream(js, SETTINGS)
    yield js
    await nc.close()


def _record(payload: dict[str, Any]) -> dict[str, Any]:
    return {
        "event_id": str(uuid.uuid4()),
        "run_id": "run-d",
        "kind": "check",
        "name": "pii",
        "occurred_at": "2026-11-22T12:00:00.123456+00:00",
        "session_id": "s-1",
        "action": "mask",
        "payload": payload,
        "project_id": "proj-1",
        "agent_id": "planner",
        "environment": None,
        "prompt_name": None,
        "prompt_version": None,
        "correlation_id": None,
        "labels": {"team": "risk"},
        "received_at": "2026-11-22T12:00:01+00:00",
    }


async def _until(check: Callable[[], bool], within_s: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + within_s
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.1)


def _dead_letters_metric() -> float:
    from prometheus_client import REGISTRY

    value = REGISTRY.get_sample_value("stockade_dead_letters_total", {"stream": SETTINGS.dead_letter_stream})
    return value or 0.0


async def test_unstorable_event_is_dead_lettered_and_the_rest_stored_once(case: Case, js: Any) -> None:
    good = [_record({"score": 0.5, "n": i}) for i in range(4)]
    bad = _record(case.bad_payload)
    batch = GuardrailEventsReceived(db_type=case.sink.kind, events=[*good[:2], bad, *good[2:]])
    await publish_batch(js, SETTINGS, batch, timeout_s=5)
    dead_letters_before = _dead_letters_metric()
    worker = SinkWorker(js, case.sink, SETTINGS)
    task = asyncio.create_task(worker.run())
    try:
        await _until(lambda: worker.stats.dead_lettered == 1 and worker.stats.batches == 1)
        await asyncio.sleep(SETTINGS.ack_wait_s + 0.5)  # an unacknowledged batch would come back by now
    finally:
        worker.stop()
        await asyncio.wait_for(task, timeout=10)

    assert sorted(await case.ids()) == sorted(r["event_id"] for r in good)  # each once, despite 3 deliveries
    assert worker.stats.batches == 1 and worker.stats.dead_lettered == 1
    assert _dead_letters_metric() == dead_letters_before + 1  # stockade_dead_letters_total on /metrics
    assert worker.stats.refused == SETTINGS.dead_letter_after - 1
    [letter] = await list_dead_letters(js, SETTINGS)
    assert letter.message.record == bad and letter.message.attempts == SETTINGS.dead_letter_after
    assert case.reason in letter.message.reason and letter.message.reason.startswith(case.sink.kind[:6])
    assert letter.message.batch_id == str(batch.event_id) and letter.message.db_type == case.sink.kind

    if case.fix is None:
        return
    # The operator fixed the store: the replayed event is stored, and leaves the dead-letter stream.
    await case.fix()
    queued, missing = await replay(js, SETTINGS, [letter.sequence], max_payload=1024 * 1024)
    assert (queued, missing) == (1, [])
    assert await list_dead_letters(js, SETTINGS) == []
    worker = SinkWorker(js, case.sink, SETTINGS)
    task = asyncio.create_task(worker.run())
    try:
        await _until(lambda: worker.stats.batches == 1)
    finally:
        worker.stop()
        await asyncio.wait_for(task, timeout=10)
    assert sorted(await case.ids()) == sorted(r["event_id"] for r in [*good, bad])
