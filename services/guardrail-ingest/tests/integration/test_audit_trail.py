"""One audit trail: trust-broker rejections and API-key revocations are stored beside run events, in the active
store, once each, also when their events come again and across a restart (README, "Audit trail").

Real servers: NATS with JetStream, and each store (MongoDB wire server, moto DynamoDB, chdb). The trust-broker and
model-api are not running: their events are published as they publish them (into the TRUST and IDENTITY streams,
``Nats-Msg-Id`` = event id).
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import nats
import pytest
import pytest_asyncio
from pydantic import SecretStr

from stockade.contracts import ApiKeyRevoked, TrustRejected, subjects
from stockade.contracts.jetstream import ensure_stream
from stockade.contracts.streams import STREAM_SPECS
from stockade.guardrail_ingest.settings import ActiveStoreSettings, AuditSettings, SinkSettings
from stockade.testing.ports import free_port

pytestmark = [pytest.mark.nats]
CONFIG = Path(__file__).resolve().parents[4] / "deploy" / "nats" / "nats-server.conf"


@pytest.fixture(
    params=[
        pytest.param("mongodb", marks=pytest.mark.mongo),
        pytest.param("dynamodb", marks=pytest.mark.dynamodb),
        pytest.param("clickhouse", marks=pytest.mark.clickhouse),
    ]
)
def store(
    request: pytest.FixtureRequest, unique_name: Callable[[str], str], monkeypatch: pytest.MonkeyPatch
) -> SinkSettings:
    kind = request.param
    table = unique_name("audit")
    if kind == "mongodb":
        return SinkSettings(kind="mongodb", mongodb_url=request.getfixturevalue("mongodb_url"), table=table)
    if kind == "dynamodb":
        for var, value in {
            "AWS_ACCESS_KEY_ID": "t",
            "AWS_SECRET_ACCESS_KEY": "t",
            "AWS_DEFAULT_REGION": "us-east-1",
        }.items():
            monkeypatch.setenv(var, value)
        endpoint = request.getfixturevalue("dynamodb_endpoint")
        return SinkSettings(kind="dynamodb", dynamodb_url=endpoint, region="us-east-1", table=table)
    return SinkSettings(
        kind="clickhouse", clickhouse_url=request.getfixturevalue("clickhouse_dsn"), table=table
    )


async def project_rows(
    store: SinkSettings, project: str, request: pytest.FixtureRequest
) -> list[dict[str, Any]]:
    """One query of the run table: every stored record of ``project`` (event_id, kind, action, reason)."""
    if store.kind == "mongodb":
        from pymongo import AsyncMongoClient

        mongo: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(store.mongodb_url)
        try:
            collection = mongo.get_default_database("stockade")[store.table]
            docs = [d async for d in collection.find({"project_id": project})]
        finally:
            await mongo.close()
        return [
            {
                "event_id": d["event_id"],
                "kind": d["kind"],
                "action": d["action"],
                "reason": d["payload"].get("reason"),
            }
            for d in docs
        ]
    if store.kind == "dynamodb":
        dynamo = request.getfixturevalue("dynamodb_client")
        if store.table not in (await asyncio.to_thread(dynamo.list_tables))["TableNames"]:
            return []  # not made yet
        items = (
            await asyncio.to_thread(
                dynamo.scan,
                TableName=store.table,
                FilterExpression="project_id = :p",
                ExpressionAttributeValues={":p": {"S": project}},
            )
        )["Items"]
        return [
            {
                "event_id": i["event_id"]["S"],
                "kind": i["kind"]["S"],
                "action": i["action"]["S"],
                "reason": json.loads(i["payload"]["S"]).get("reason"),
            }
            for i in items
        ]
    ch = request.getfixturevalue("clickhouse_client")
    if not int(await asyncio.to_thread(ch.command, f"EXISTS TABLE {store.table}")):
        return []  # not made yet
    rows = await asyncio.to_thread(
        lambda: (
            ch.query(
                f"SELECT event_id, kind, action, JSONExtractString(payload, 'reason') FROM {store.table} "
                "WHERE project_id = %(p)s",
                parameters={"p": project},
            ).result_rows
        )
    )
    return [{"event_id": r[0], "kind": r[1], "action": r[2], "reason": r[3] or None} for r in rows]


@pytest_asyncio.fixture
async def js(fresh_nats_url: str) -> AsyncIterator[Any]:
    nc = await nats.connect(fresh_nats_url)
    js = nc.jetstream()
    for subject in (subjects.TRUST_REJECTED, subjects.APIKEY_REVOKED):  # as trust-broker and model-api do
        stream = subjects.stream_for(subject)
        await ensure_stream(js, STREAM_SPECS[stream])
    yield js
    await nc.drain()


async def publish(js: Any, event: TrustRejected | ApiKeyRevoked, msg_id: str | None = None) -> None:
    headers = event.headers()
    if msg_id is not None:  # the same event again after JetStream's duplicate window (an outbox replay)
        headers["Nats-Msg-Id"] = msg_id
    await js.publish(event.subject, event.to_bytes(), headers=headers)


async def test_trust_rejections_and_revocations_are_stored_once_beside_run_events(
    fresh_nats_url: str, js: Any, store: SinkSettings, request: pytest.FixtureRequest, kit: Any
) -> None:
    settings = kit.settings(fresh_nats_url, store)
    settings.active = ActiveStoreSettings(follow=False)
    settings.audit = AuditSettings(project_id="proj-1")
    rejection = TrustRejected(sender="agent-a", receiver="agent-b", reason="bad_signature", layer="B")
    revocation = ApiKeyRevoked(key_id="key-123", owner_id="user-7")
    body = kit.batch_body(2, run_id="run-audit")  # project proj-1

    async with kit.served(settings) as base, httpx.AsyncClient(base_url=base) as client:
        assert (await client.post(f"/api/v1/guardrails/{store.kind}", json=body)).status_code == 202
        await publish(js, rejection)
        await publish(js, revocation)
        rows = await kit.wait_for(lambda: _when_n(project_rows(store, "proj-1", request), 4), within_s=30)
    assert sorted((r["kind"], r["action"]) for r in rows) == [
        ("audit", "revoke"),
        ("check", "mask"),
        ("check", "mask"),
        ("trust", "block"),
    ]
    trust = next(r for r in rows if r["kind"] == "trust")
    assert trust["event_id"] == str(rejection.event_id) and trust["reason"] == "bad_signature"

    # While the service is down: both events come again (new message ids), and one new rejection is published.
    await publish(js, rejection, msg_id=f"{rejection.event_id}-again")
    await publish(js, revocation, msg_id=f"{revocation.event_id}-again")
    later = TrustRejected(sender=None, receiver="agent-b", reason="malformed", layer="B")
    await publish(js, later)
    async with kit.served(settings):  # the durable consumers resume where they stopped
        rows = await kit.wait_for(lambda: _when_n(project_rows(store, "proj-1", request), 5), within_s=30)
        assert await kit.wait_for(lambda: _drained(js), within_s=30)  # the replays were read and acked too
        rows = await project_rows(store, "proj-1", request)
    ids = [r["event_id"] for r in rows]
    assert len(ids) == len(set(ids)) == 5
    assert {str(rejection.event_id), str(revocation.event_id), str(later.event_id)} <= set(ids)


async def _when_n(rows: Any, n: int) -> list[dict[str, Any]] | None:
    found = await rows
    return found if len(found) >= n else None


async def _drained(js: Any) -> bool:
    """Every audited event read and acknowledged by guardrail-ingest's durable consumers."""
    for subject in (subjects.TRUST_REJECTED, subjects.APIKEY_REVOKED):
        stream = subjects.stream_for(subject)
        info = await js.consumer_info(stream, f"guardrail-ingest-audit-{stream.lower()}")
        if info.num_pending or info.num_ack_pending:
            return False
    return True


async def test_audit_trail_runs_under_the_shipped_nats_permissions(
    nats_server_factory: Any,
    clickhouse_dsn: str,
    unique_name: Callable[[str], str],
    request: pytest.FixtureRequest,
    kit: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """deploy/nats/nats-server.conf as shipped: trust-broker and model-api publish with their own users, and
    guardrail-ingest (its user) reads both streams into the store."""
    text = (
        CONFIG.read_text()
        .replace("include agents.conf", "users: []")
        .replace("store_dir: /data/jetstream", "")
    )
    text = text.replace("http: 0.0.0.0:8222", f"http: 127.0.0.1:{free_port()}")
    password = "pw" + secrets.token_hex(16)
    for user in ("PROMPT_API", "MODEL_API", "GUARDRAIL_INGEST", "TRUST_BROKER"):
        monkeypatch.setenv(f"NATS_{user}_PASSWORD", password)
    server = nats_server_factory(text)
    rejection = TrustRejected(sender="agent-a", receiver="agent-b", reason="unknown_sender", layer="A")
    revocation = ApiKeyRevoked(key_id="key-9", owner_id="user-1")
    for user, event in (("trust-broker", rejection), ("model-api", revocation)):
        prefix = subjects.user_reply_prefix(user)  # the only replies deploy/nats lets the user read
        nc = await nats.connect(server.url, user=user, password=password, inbox_prefix=prefix)
        producer = nc.jetstream()
        stream = subjects.stream_for(event.subject)
        await ensure_stream(producer, STREAM_SPECS[stream])
        await publish(producer, event)
        await nc.drain()

    store = SinkSettings(kind="clickhouse", clickhouse_url=clickhouse_dsn, table=unique_name("auditperm"))
    settings = kit.settings(server.url, store)
    settings.nats.user, settings.nats.password = "guardrail-ingest", SecretStr(password)
    settings.active = ActiveStoreSettings(follow=False)
    settings.audit = AuditSettings(project_id="proj-9")
    async with kit.served(settings):
        rows = await kit.wait_for(lambda: _when_n(project_rows(store, "proj-9", request), 2), within_s=30)
    assert rows and sorted(r["event_id"] for r in rows) == sorted(
        [str(rejection.event_id), str(revocation.event_id)]
    )


@pytest.mark.mongo
async def test_audit_events_are_stored_when_their_streams_appear_after_ingest_started(
    fresh_nats_url: str,
    mongodb_url: str,
    unique_name: Callable[[str], str],
    request: pytest.FixtureRequest,
    kit: Any,
) -> None:
    """ingest starts before the trust-broker and model-api have made TRUST and IDENTITY: it keeps trying."""
    store = SinkSettings(kind="mongodb", mongodb_url=mongodb_url, table=unique_name("auditlate"))
    settings = kit.settings(fresh_nats_url, store)
    settings.active = ActiveStoreSettings(follow=False)
    settings.audit = AuditSettings(project_id="proj-late")
    rejection = TrustRejected(sender="agent-x", receiver="agent-y", reason="replayed_nonce", layer="B")
    revocation = ApiKeyRevoked(key_id="key-late", owner_id="user-2")
    async with kit.served(settings):
        nc = await nats.connect(fresh_nats_url)
        try:
            producer = nc.jetstream()
            for event in (rejection, revocation):
                stream = subjects.stream_for(event.subject)
                await ensure_stream(producer, STREAM_SPECS[stream])
                await publish(producer, event)
        finally:
            await nc.drain()
        rows = await kit.wait_for(lambda: _when_n(project_rows(store, "proj-late", request), 2), within_s=30)
    assert rows and {r["reason"] for r in rows} == {"replayed_nonce", "apikey_revoked"}
