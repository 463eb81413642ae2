"""guardrail-ingest runs as NATS user ``guardrail-ingest`` of deploy/nats/nats-server.conf (the real file, with
the test substitutions of tests/deploy/test_nats_permissions.py): stream creation, publish, durable pull
consumer, ack all fit its permissions, and a POSTed batch is stored. It learns the active database configuration
from model-api (user ``model-api``) over ``dbconfig.cmd.active.v1``, and from the stream MODELS when model-api is
away."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import nats
import pytest
from pydantic import SecretStr

from stockade.contracts import (
    ActiveDbConfig,
    ApiKeyRevoked,
    DbConfigActivated,
    IngestKeyQuery,
    IngestKeyVerdict,
    subjects,
)
from stockade.contracts.jetstream import ensure_stream
from stockade.contracts.nats_sync import sync_with_server
from stockade.contracts.streams import STREAM_SPECS
from stockade.guardrail_ingest.settings import IngestSettings, SinkSettings
from stockade.runtime.bus import connect_broker, make_broker, stop_broker
from stockade.runtime.settings import NatsSettings
from stockade.testing.ports import free_port

pytestmark = [pytest.mark.nats, pytest.mark.clickhouse]

CONFIG = Path(__file__).resolve().parents[4] / "deploy" / "nats" / "nats-server.conf"
NO_AGENTS = "users: []"


def deploy_nats(nats_server_factory: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, str]:
    text = CONFIG.read_text()
    text = text.replace("include agents.conf", NO_AGENTS).replace("store_dir: /data/jetstream", "")
    text = text.replace("http: 0.0.0.0:8222", f"http: 127.0.0.1:{free_port()}")
    password = "pw" + secrets.token_hex(16)  # NATS parses $VAR values: start with a letter
    for user in ("PROMPT_API", "MODEL_API", "GUARDRAIL_INGEST", "TRUST_BROKER"):
        monkeypatch.setenv(f"NATS_{user}_PASSWORD", password)
    return nats_server_factory(text), password


async def test_ingest_keys_are_verified_and_revoked_under_the_deploy_grants(
    nats_server_factory: Any,
    clickhouse_dsn: str,
    unique_name: Callable[[str], str],
    kit: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """guardrail-ingest asks model-api about a key (apikey.cmd.verify_ingest.v1), caches the answer, and drops it
    on model-api's apikey.revoked.v1: each step needs a grant of deploy/nats."""
    server, password = deploy_nats(nats_server_factory, monkeypatch)
    settings = kit.settings(
        server.url,
        SinkSettings(kind="clickhouse", url=clickhouse_dsn, table=unique_name("keys")),
        workers=0,
        ingest=IngestSettings(auth="keys", key_cache_s=300),
    )
    settings.active.follow = False
    settings.nats.user, settings.nats.password = "guardrail-ingest", SecretStr(password)
    key = "stk_" + "A" * 12 + secrets.token_hex(19)  # the key format; model-api's answer decides the rest
    questions: list[IngestKeyQuery] = []
    revoked: set[str] = set()

    async def answer(msg: Any) -> None:
        query = IngestKeyQuery.model_validate_json(msg.data)
        questions.append(query)
        valid = query.key_id not in revoked
        reason = "ingest key" if valid else "the key is revoked"
        verdict = IngestKeyVerdict(valid=valid, reason=reason, key_id=query.key_id, project_id="proj-1")
        await msg.respond(verdict.model_dump_json().encode())

    model_api = await nats.connect(
        server.url, user="model-api", password=password, inbox_prefix=subjects.user_reply_prefix("model-api")
    )
    await model_api.subscribe(subjects.APIKEY_CMD_VERIFY_INGEST, queue="model-api", cb=answer)
    await sync_with_server(model_api)
    sent = {"X-API-Key": key}
    async with kit.served(settings) as base, httpx.AsyncClient(base_url=base) as client:
        first = await client.post("/api/v1/guardrails/clickhouse", json=kit.batch_body(2), headers=sent)
        assert first.status_code == 202, first.text
        again = await client.post("/api/v1/guardrails/clickhouse", json=kit.batch_body(2), headers=sent)
        assert again.status_code == 202 and len(questions) == 1  # the second one came from the cache
        assert questions[0].key_id == "A" * 12 and key not in questions[0].model_dump_json()
        revoked.add("A" * 12)
        await model_api.publish(
            subjects.APIKEY_REVOKED, ApiKeyRevoked(key_id="A" * 12, owner_id="u").to_bytes()
        )

        async def refused() -> bool:
            reply = await client.post("/api/v1/guardrails/clickhouse", json=kit.batch_body(1), headers=sent)
            return reply.status_code == 401

        assert await kit.wait_for(refused, within_s=10)  # the cache (300 s) was dropped by the event
    await model_api.drain()


async def test_service_works_with_its_least_privilege_nats_user(
    nats_server_factory: Any,
    clickhouse_dsn: str,
    unique_name: Callable[[str], str],
    kit: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = CONFIG.read_text()
    text = text.replace("include agents.conf", NO_AGENTS).replace("store_dir: /data/jetstream", "")
    text = text.replace("http: 0.0.0.0:8222", f"http: 127.0.0.1:{free_port()}")
    password = "pw" + secrets.token_hex(16)  # NATS parses $VAR values: start with a letter
    for user in ("PROMPT_API", "MODEL_API", "GUARDRAIL_INGEST", "TRUST_BROKER"):
        monkeypatch.setenv(f"NATS_{user}_PASSWORD", password)
    server = nats_server_factory(text)

    settings = kit.settings(
        server.url, SinkSettings(kind="clickhouse", url=clickhouse_dsn, table=unique_name("perm")), workers=1
    )
    settings.nats.user, settings.nats.password = "guardrail-ingest", SecretStr(password)
    # model-api (its own user) has activated ClickHouse: the event is in MODELS and it answers the request.
    model_api = await nats.connect(
        server.url, user="model-api", password=password, inbox_prefix=subjects.user_reply_prefix("model-api")
    )
    js = model_api.jetstream()
    await ensure_stream(js, STREAM_SPECS["MODELS"])
    event = DbConfigActivated(db_config_id="cfg-1", db_type="clickhouse", activated_at=datetime.now(UTC))
    await js.publish(event.subject, event.to_bytes(), headers=event.headers())
    active_reply = ActiveDbConfig(
        db_config_id="cfg-1", db_type="clickhouse", name="ch", activated_at=event.activated_at
    )

    async def answer(msg: Any) -> None:
        await msg.respond(active_reply.model_dump_json().encode())

    responder = await model_api.subscribe(subjects.DBCONFIG_CMD_ACTIVE, cb=answer)
    await sync_with_server(model_api)
    settings.sink.kind = "mongodb"  # the deployment default; the active configuration says clickhouse
    settings.sink.clickhouse_url, settings.sink.url = clickhouse_dsn, None
    body = kit.batch_body(4)
    async with kit.served(settings) as base, httpx.AsyncClient(base_url=base) as client:
        assert (await client.get("/api/v1/status")).json()["active"]["source"] == "model-api"
        await responder.unsubscribe()  # model-api away: a second replica reads the stream (MSG.GET grant)
        second = kit.settings(server.url, settings.sink, workers=0)
        second.nats.user, second.nats.password = "guardrail-ingest", SecretStr(password)
        async with kit.served(second) as other, httpx.AsyncClient(base_url=other) as other_client:
            active = (await other_client.get("/api/v1/status")).json()["active"]
            assert (active["source"], active["db_type"]) == ("stream", "clickhouse")
        reply = await client.post("/api/v1/guardrails/clickhouse", json=body)
        assert reply.status_code == 202, reply.text

        async def stored() -> dict[str, Any] | None:
            status = (await client.get("/api/v1/status")).json()
            return status if status["inserted"] == 4 else None

        status = await kit.wait_for(stored, within_s=20)
    await model_api.drain()
    assert status and status["last_error"] is None and status["store_errors"] == 0


async def test_the_console_reads_the_run_store_through_ingest_under_deploy_nats(
    nats_server_factory: Any,
    clickhouse_dsn: str,
    unique_name: Callable[[str], str],
    kit: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """guardrail.cmd.read_runs.v2 under deploy/nats: model-api may ask, guardrail-ingest may answer, and a run
    longer than one reply comes in several requests (``allow_responses: true`` allows one reply each)."""
    from stockade.contracts.run_store import GetRun, RunDetailReply, RunScope
    from stockade.guardrail_ingest.records import to_records
    from stockade.guardrail_ingest.run_reads import RunReads
    from stockade.guardrail_ingest.sinks.clickhouse import ClickHouseSink
    from stockade.guardrail_ingest.sinks.router import FixedStore
    from stockade.guardrails.storage.wire import GuardrailBatch

    server, password = deploy_nats(nats_server_factory, monkeypatch)
    sink = ClickHouseSink(clickhouse_dsn, unique_name("reads"))
    await sink.ensure_schema()
    await sink.write(to_records(GuardrailBatch.model_validate(kit.batch_body(30, run_id="parts"))))
    ingest_settings = NatsSettings(
        url=server.url, user="guardrail-ingest", password=SecretStr(password), startup_wait_s=5
    )
    ingest = make_broker(ingest_settings, name="guardrail-ingest")  # as the service: a FastStream subscriber
    nc = await connect_broker(ingest, ingest_settings)
    model_api = await nats.connect(
        server.url, user="model-api", password=password, inbox_prefix=subjects.user_reply_prefix("model-api")
    )
    try:
        reads = RunReads(FixedStore(sink), lambda: "clickhouse", reply_bytes=4096 + 1500)
        reads.declare(ingest, lambda: nc.max_payload)
        await ingest.start()
        await sync_with_server(nc)
        scope = RunScope(projects=frozenset({"proj-1"}))
        ids: list[str] = []
        offset: int | None = 0
        replies = 0
        while offset is not None:
            request = GetRun(scope=scope, run_id="parts", offset=offset)
            reply = await model_api.request(subjects.GUARDRAIL_CMD_READ_RUNS, request.to_bytes(), timeout=5)
            detail = RunDetailReply.model_validate_json(reply.data)
            ids += [e.event_id for e in detail.run.events]
            offset, replies = detail.next_offset, replies + 1
        assert replies > 1 and len(ids) == len(set(ids)) == 30
    finally:
        await model_api.drain()
        await stop_broker(ingest, 5)
        await sink.aclose()
