"""Activating a database configuration switches the store of every replica, without a restart, and each accepted
event is stored once, in the store it was routed to when accepted (README, "Which store").

Real servers: NATS with JetStream, the MongoDB wire server, the moto DynamoDB server and chdb. model-api is not
running here: activations are published as its outbox does (``DbConfigActivated`` into the stream ``MODELS``
with ``Nats-Msg-Id``), and a test responder answers ``dbconfig.cmd.active.v1`` where a test needs model-api.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import nats
import pytest
import pytest_asyncio

from stockade.contracts import ActiveDbConfig, DbConfigActivated, subjects
from stockade.contracts.jetstream import ensure_stream
from stockade.contracts.nats_sync import sync_with_server
from stockade.contracts.streams import STREAM_SPECS
from stockade.guardrail_ingest.settings import ActiveStoreSettings, SinkSettings
from stockade.testing.ports import free_port

pytestmark = [pytest.mark.nats, pytest.mark.mongo, pytest.mark.dynamodb, pytest.mark.clickhouse]

T0 = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


@pytest.fixture
def stores(
    mongodb_url: str,
    dynamodb_endpoint: str,
    clickhouse_dsn: str,
    unique_name: Callable[[str], str],
    monkeypatch: pytest.MonkeyPatch,
) -> SinkSettings:
    """All three stores reachable (as a deployment's per-store settings say); the default is MongoDB."""
    for var, value in {
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(var, value)
    return SinkSettings(
        kind="mongodb",
        mongodb_url=mongodb_url,
        dynamodb_url=dynamodb_endpoint,
        clickhouse_url=clickhouse_dsn,
        region="us-east-1",
        table=unique_name("switch"),
    )


@pytest_asyncio.fixture
async def bus(fresh_nats_url: str) -> AsyncIterator[Any]:
    nc = await nats.connect(fresh_nats_url)
    yield nc
    await nc.drain()


async def activate(nc: Any, db_type: str, at: datetime, config_id: str | None = None) -> DbConfigActivated:
    """What model-api's outbox relay publishes when a configuration is activated."""
    js = nc.jetstream()
    stream = subjects.stream_for(subjects.DBCONFIG_ACTIVATED)
    await ensure_stream(js, STREAM_SPECS[stream])
    event = DbConfigActivated(
        db_config_id=config_id or f"cfg-{db_type}",
        db_type=db_type,
        name=f"{db_type} store",
        activated_at=at,
    )
    await js.publish(event.subject, event.to_bytes(), headers=event.headers())
    return event


async def stored_ids(stores: SinkSettings, request: pytest.FixtureRequest) -> dict[str, list[str]]:
    """Every stored event_id per store, one entry per stored document / item / physical row (no FINAL)."""
    from pymongo import AsyncMongoClient

    table = stores.table
    found: dict[str, list[str]] = {}
    mongo: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(stores.mongodb_url)
    try:
        collection = mongo.get_default_database("stockade")[table]
        found["mongodb"] = [d["event_id"] async for d in collection.find({}, {"event_id": 1})]
    finally:
        await mongo.close()
    dynamo = request.getfixturevalue("dynamodb_client")
    tables = (await asyncio.to_thread(dynamo.list_tables))["TableNames"]
    items = (
        (await asyncio.to_thread(dynamo.scan, TableName=table, ProjectionExpression="event_id"))["Items"]
        if table in tables
        else []
    )
    found["dynamodb"] = [i["event_id"]["S"] for i in items]
    ch = request.getfixturevalue("clickhouse_client")
    exists = await asyncio.to_thread(ch.command, f"EXISTS TABLE {table}")
    rows = (
        await asyncio.to_thread(lambda: ch.query(f"SELECT event_id FROM {table}").result_rows)
        if int(exists)
        else []
    )
    found["clickhouse"] = [r[0] for r in rows]
    return found


async def post(client: httpx.AsyncClient, db_type: str, body: dict[str, Any]) -> httpx.Response:
    return await client.post(f"/api/v1/guardrails/{db_type}", json=body)


def ids_of(*bodies: dict[str, Any]) -> list[str]:
    return [e["event_id"] for b in bodies for e in b["events"]]


async def test_events_stay_in_the_store_they_were_accepted_for_across_switches(
    fresh_nats_url: str, bus: Any, stores: SinkSettings, request: pytest.FixtureRequest, kit: Any
) -> None:
    # model-api is away; its last activation (MongoDB) is in the stream: a replica starting now uses it.
    await activate(bus, "mongodb", T0)
    edge = kit.settings(fresh_nats_url, stores, workers=0)  # accepts only: batches wait in JetStream
    edge.active = ActiveStoreSettings(resync_s=0.2)
    batches: dict[str, list[dict[str, Any]]] = {"mongodb": [], "dynamodb": [], "clickhouse": []}
    async with kit.served(edge) as base, httpx.AsyncClient(base_url=base) as client:
        status = (await client.get("/api/v1/status")).json()
        assert status["active"]["source"] == "stream" and status["db_type"] == "mongodb"
        for _ in range(3):
            body = kit.batch_body(4, run_id=f"run-{uuid.uuid4().hex[:6]}")
            assert (await post(client, "mongodb", body)).status_code == 202
            batches["mongodb"].append(body)

        first_mongo_batch = batches["mongodb"][0]
        for n, kind in enumerate(("dynamodb", "clickhouse"), start=1):
            await activate(bus, kind, T0 + timedelta(minutes=n))

            async def switched(kind: str = kind) -> bool:
                return bool((await client.get("/api/v1/db_type")).json() == {"db_type": kind})

            assert await kit.wait_for(switched), f"the replica did not switch to {kind}"
            refused = await post(client, "mongodb", kit.batch_body(1))
            assert refused.status_code == 409, refused.text
            assert refused.json()["error"]["code"] == "db_type_mismatch"
            for _ in range(3):
                body = kit.batch_body(4, run_id=f"run-{uuid.uuid4().hex[:6]}")
                reply = await post(client, kind, body)
                assert reply.status_code == 202 and reply.json()["db_type"] == kind, reply.text
                batches[kind].append(body)

        # A client that resends a batch accepted before the switches (its reply was lost) to the new store:
        # JetStream drops the copy (same message id), so it is not stored a second time in another store.
        again = await post(client, "clickhouse", first_mongo_batch)
        assert again.status_code == 202 and again.json()["duplicate"] is True

        # Nothing is written yet: every batch is still queued. A replica with sink workers starts now (model-api
        # still away, so it learns clickhouse from the stream) and drains the queue.
        assert await stored_ids(stores, request) == {"mongodb": [], "dynamodb": [], "clickhouse": []}
        worker = kit.settings(fresh_nats_url, stores, workers=2)
        async with kit.served(worker) as worker_base, httpx.AsyncClient(base_url=worker_base) as wclient:
            assert (await wclient.get("/api/v1/db_type")).json() == {"db_type": "clickhouse"}
            expected = sum(len(ids_of(*b)) for b in batches.values())

            async def drained() -> dict[str, Any] | None:
                s = (await wclient.get("/api/v1/status")).json()
                return s if s["inserted"] + s["duplicates"] >= expected else None

            final = await kit.wait_for(drained, within_s=60)
            assert final, (await wclient.get("/api/v1/status")).json()

    found = await stored_ids(stores, request)
    for kind, bodies in batches.items():
        assert sorted(found[kind]) == sorted(ids_of(*bodies)), f"{kind} holds other events than routed to it"
    every = [i for ids in found.values() for i in ids]
    assert len(every) == len(set(every)) == 36, "an event was lost or stored twice"
    assert final["store_errors"] == 0 and final["last_error"] is None


async def test_every_replica_follows_an_activation_without_restart(
    fresh_nats_url: str, bus: Any, stores: SinkSettings, request: pytest.FixtureRequest, kit: Any
) -> None:
    """Two running replicas with workers: one activation event switches both; the next run is stored there."""
    first = kit.settings(fresh_nats_url, stores, workers=1)
    second = kit.settings(fresh_nats_url, stores, workers=1)
    async with (
        kit.served(first) as a,
        kit.served(second) as b,
        httpx.AsyncClient(base_url=a) as ca,
        httpx.AsyncClient(base_url=b) as cb,
    ):
        # Nothing known (no model-api, nothing in the stream): the deployment default, MongoDB.
        assert (await ca.get("/api/v1/status")).json()["active"]["source"] == "default"
        before = kit.batch_body(3)
        assert (await post(ca, "mongodb", before)).status_code == 202
        await activate(bus, "dynamodb", T0)
        for client in (ca, cb):

            async def on_dynamo(client: httpx.AsyncClient = client) -> bool:
                return bool((await client.get("/api/v1/db_type")).json()["db_type"] == "dynamodb")

            assert await kit.wait_for(on_dynamo)
        after = kit.batch_body(3)
        assert (await post(cb, "dynamodb", after)).status_code == 202

        async def both_stored() -> dict[str, list[str]] | None:
            found = await stored_ids(stores, request)
            return found if len(found["mongodb"]) == 3 and len(found["dynamodb"]) == 3 else None

        found = await kit.wait_for(both_stored, within_s=30)
    assert found, await stored_ids(stores, request)
    assert sorted(found["mongodb"]) == sorted(ids_of(before))
    assert sorted(found["dynamodb"]) == sorted(ids_of(after))
    assert found["clickhouse"] == []


async def test_model_api_answer_wins_over_the_default_and_an_older_stream_message(
    fresh_nats_url: str, bus: Any, stores: SinkSettings, kit: Any
) -> None:
    """At start-up the replica asks model-api; later answers (resync) are followed too, but an answer to a request
    sent before a newer activation event cannot undo it."""
    await activate(bus, "dynamodb", T0)  # older, in the stream
    answer = {
        "value": ActiveDbConfig(
            db_config_id="cfg-ch",
            db_type="clickhouse",
            name="analytics",
            activated_at=T0 + timedelta(hours=1),
        )
    }

    async def model_api(msg: Any) -> None:
        await msg.respond(answer["value"].model_dump_json().encode())

    responder = await bus.subscribe(subjects.DBCONFIG_CMD_ACTIVE, cb=model_api)
    await sync_with_server(bus)  # one flush() can return before the server has the SUB
    settings = kit.settings(fresh_nats_url, stores, workers=0)
    settings.active = ActiveStoreSettings(resync_s=0.2)
    async with kit.served(settings) as base, httpx.AsyncClient(base_url=base) as client:
        active = (await client.get("/api/v1/status")).json()["active"]
        assert active["db_type"] == "clickhouse" and active["source"] == "model-api"
        assert active["db_config_id"] == "cfg-ch"

        # The console activates MongoDB: model-api's database says so too, and the replica follows.
        answer["value"] = ActiveDbConfig(
            db_config_id="cfg-m", db_type="mongodb", name="docs", activated_at=T0 + timedelta(hours=2)
        )

        async def on_mongo() -> bool:
            return bool((await client.get("/api/v1/db_type")).json()["db_type"] == "mongodb")

        assert await kit.wait_for(on_mongo)
        # model-api goes away: the replica keeps what it knows (the stream's older message does not win).
        await responder.unsubscribe()
        await asyncio.sleep(0.5)
        assert (await client.get("/api/v1/db_type")).json()["db_type"] == "mongodb"


async def test_a_store_that_is_down_does_not_hold_up_batches_for_another(
    fresh_nats_url: str,
    bus: Any,
    stores: SinkSettings,
    request: pytest.FixtureRequest,
    kit: Any,
) -> None:
    """ClickHouse was active, then DynamoDB (unreachable) was activated: a replica starting now stores the batch
    queued for ClickHouse while the DynamoDB batch waits and is retried."""
    down = stores.model_copy(update={"dynamodb_url": f"http://127.0.0.1:{free_port()}", "timeout_s": 1.0})
    await activate(bus, "clickhouse", T0)
    edge = kit.settings(fresh_nats_url, down, workers=0)
    edge.active = ActiveStoreSettings(resync_s=0.2)
    for_clickhouse, for_dynamo = kit.batch_body(3, run_id="run-ch"), kit.batch_body(3, run_id="run-dy")
    async with kit.served(edge) as base, httpx.AsyncClient(base_url=base) as client:
        assert (await post(client, "clickhouse", for_clickhouse)).status_code == 202
        await activate(bus, "dynamodb", T0 + timedelta(minutes=1))

        async def on_dynamo() -> bool:
            return bool((await client.get("/api/v1/db_type")).json()["db_type"] == "dynamodb")

        assert await kit.wait_for(on_dynamo)
        assert (await post(client, "dynamodb", for_dynamo)).status_code == 202
    worker = kit.settings(fresh_nats_url, down, workers=1)
    async with kit.served(worker) as base, httpx.AsyncClient(base_url=base) as client:

        async def clickhouse_stored() -> dict[str, Any] | None:
            status = (await client.get("/api/v1/status")).json()
            return status if status["inserted"] == 3 and status["store_errors"] > 0 else None

        status = await kit.wait_for(clickhouse_stored, within_s=30)
        assert status, (await client.get("/api/v1/status")).json()
        assert status["db_type"] == "dynamodb" and status["schema_ready"] is False
    found = await stored_ids(stores, request)  # the reachable stores
    assert sorted(found["clickhouse"]) == sorted(ids_of(for_clickhouse))
    assert found["mongodb"] == [] and found["dynamodb"] == []
