"""Activating a database configuration through model-api switches where guardrail-ingest stores run events.

Both services run in this process over one real NATS server (JetStream) and a real PostgreSQL database; the
three stores are the real servers of stockade.testing (MongoDB wire server, moto DynamoDB, chdb). An agent's
``BackendGuardrailSink`` keeps sending runs: after each activation it gets a 409, asks ``/api/v1/db_type`` again
and resends, and its next run is stored in the newly active store.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from stockade import identity
from stockade.guardrail_ingest.main import create_app as create_ingest
from stockade.guardrail_ingest.settings import (
    ActiveStoreSettings,
    GuardrailIngestSettings,
    SinkSettings,
    StreamSettings,
)
from stockade.guardrails.events import EventKind, GuardrailEvent
from stockade.guardrails.storage.config import StorageConfig
from stockade.guardrails.storage.sink import BackendGuardrailSink
from stockade.guardrails.storage.wire import RunInfo
from stockade.model_api.main import create_app as create_model_api
from stockade.model_api.settings import ModelApiSettings, SessionSettings
from stockade.runtime.settings import DatabaseSettings, HttpSettings, NatsSettings
from stockade.testing.asgi import serving

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.nats,
    pytest.mark.postgres,
    pytest.mark.mongo,
    pytest.mark.dynamodb,
    pytest.mark.clickhouse,
]
PASSWORD = "correct horse battery staple"


async def stored(sink: SinkSettings, request: pytest.FixtureRequest) -> dict[str, set[str]]:
    from pymongo import AsyncMongoClient

    found: dict[str, set[str]] = {}
    mongo: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(sink.mongodb_url)
    try:
        docs = mongo.get_default_database("stockade")[sink.table].find({}, {"run_id": 1})
        found["mongodb"] = {d["run_id"] async for d in docs}
    finally:
        await mongo.close()
    dynamo = request.getfixturevalue("dynamodb_client")
    if sink.table in (await asyncio.to_thread(dynamo.list_tables))["TableNames"]:
        items = await asyncio.to_thread(dynamo.scan, TableName=sink.table, ProjectionExpression="run_id")
        found["dynamodb"] = {i["run_id"]["S"] for i in items["Items"]}
    else:
        found["dynamodb"] = set()
    ch = request.getfixturevalue("clickhouse_client")
    if int(await asyncio.to_thread(ch.command, f"EXISTS TABLE {sink.table}")):
        rows = await asyncio.to_thread(
            lambda: ch.query(f"SELECT DISTINCT run_id FROM {sink.table}").result_rows
        )
        found["clickhouse"] = {r[0] for r in rows}
    else:
        found["clickhouse"] = set()
    return found


async def test_activating_a_configuration_moves_the_next_run_to_that_store(
    nats_server_factory: Any,
    postgres_database: str,
    mongodb_url: str,
    dynamodb_endpoint: str,
    clickhouse_dsn: str,
    unique_name: Callable[[str], str],
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for var, value in {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"}.items():
        monkeypatch.setenv(var, value)
    nats_url = str(nats_server_factory().url)
    model_api = create_model_api(
        ModelApiSettings(
            db=DatabaseSettings(url=postgres_database),
            nats=NatsSettings(url=nats_url),
            session=SessionSettings(secure="auto"),
        )
    )
    sink = SinkSettings(
        kind="mongodb",  # the deployment default: model-api's answer (its first-use default) replaces it
        mongodb_url=mongodb_url,
        dynamodb_url=dynamodb_endpoint,
        clickhouse_url=clickhouse_dsn,
        region="us-east-1",
        table=unique_name("e2e"),
    )
    ingest = create_ingest(
        GuardrailIngestSettings(
            nats=NatsSettings(url=nats_url, startup_wait_s=5),
            db=DatabaseSettings(url="sqlite+aiosqlite:///:memory:"),
            http=HttpSettings(port=0),
            sink=sink,
            active=ActiveStoreSettings(resync_s=30),  # the switch must come from the event, not the resync
            jetstream=StreamSettings(workers=1, fetch_timeout_s=0.3, retry_delay_s=0.3),
        )
    )
    email = f"{unique_name('admin')}@example.org"
    async with serving(model_api) as console_url, httpx.AsyncClient(base_url=console_url) as console:
        async with model_api.state.service.sessions() as s:  # the agent sends with its project's ingest key
            user = await identity.create_user(s, email, PASSWORD)
            org = await identity.create_organisation(s, unique_name("org"))
            project = await identity.create_project(s, org.id, "agents", "direct")
            await identity.add_project_member(s, project.id, user.id)
            ingest_key = await identity.create_api_key(s, user.id, scope="ingest", project=project.id)
            await identity.grant_platform_admin(s, user.id)  # activating configurations needs the role
            await s.commit()
        signed_in = await console.post(
            "/login", data={"email": email, "password": PASSWORD, "next": "/models"}
        )
        assert signed_in.status_code == 303, signed_in.text
        console.headers["X-CSRF-Token"] = (await console.get("/api/platform/session")).json()["csrfToken"]
        async with serving(ingest) as ingest_url, httpx.AsyncClient(base_url=ingest_url) as backend:
            agent = BackendGuardrailSink(
                StorageConfig(enabled=True, backend_url=ingest_url, api_key=ingest_key.key)
            )
            configs = (await console.get("/api/platform/db-configs")).json()["dbConfigs"]
            active = next(c for c in configs if c["active"])
            assert (await backend.get("/api/v1/db_type")).json() == {"db_type": active["dbType"]}

            runs: dict[str, str] = {}
            switch_ms: list[float] = []

            async def send_run() -> str:
                run_id = f"run-{uuid.uuid4().hex[:8]}"
                events = [GuardrailEvent(kind=EventKind.CHECK, name="pii", action="allow") for _ in range(3)]
                outcome = await agent.send(RunInfo(run_id=run_id, project_id=project.id), events)
                assert outcome.error is None and outcome.sent == 3, outcome
                runs[run_id] = str(outcome.db_type)
                return run_id

            await send_run()
            for kind in ("mongodb", "dynamodb", "clickhouse"):
                if kind == active["dbType"]:
                    continue
                created = await console.post("/api/platform/db-configs", json={"name": kind, "db_type": kind})
                assert created.status_code == 201, created.text
                started = time.monotonic()
                done = await console.post(f"/api/platform/db-configs/{created.json()['id']}/activate")
                assert done.status_code == 200, done.text

                for _ in range(1500):  # up to about 15 s
                    if (await backend.get("/api/v1/db_type")).json()["db_type"] == kind:
                        break
                    await asyncio.sleep(0.01)
                else:
                    pytest.fail(f"guardrail-ingest did not switch to {kind}")
                switch_ms.append((time.monotonic() - started) * 1000)
                await send_run()  # the agent's cached db_type is stale: 409, ask again, resend
            print(f"activation to ingest switch: {', '.join(f'{ms:.0f} ms' for ms in switch_ms)}")

            async def all_stored() -> dict[str, set[str]] | None:
                found = await stored(sink, request)
                return found if sum(len(v) for v in found.values()) == len(runs) else None

            deadline = asyncio.get_running_loop().time() + 30
            found = await all_stored()
            while found is None and asyncio.get_running_loop().time() < deadline:
                await asyncio.sleep(0.2)
                found = await all_stored()
    assert found is not None, await stored(sink, request)
    assert set(runs.values()) == {"mongodb", "dynamodb", "clickhouse"}
    for run_id, kind in runs.items():
        assert {k for k, ids in found.items() if run_id in ids} == {kind}, f"{run_id} not only in {kind}"
