"""guardrail-ingest requires a per-project ingest key, verified by model-api over NATS.

model-api and guardrail-ingest run in this process over one real NATS server and a real PostgreSQL database
(the identity tables); run events go to ClickHouse (chdb). Before this change ingest accepted any batch from
anyone: each assertion on a 401 or 403 below failed then.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from stockade import identity
from stockade.contracts import ApiKeyRevoked, IngestKeyQuery, subjects
from stockade.contracts.nats_sync import sync_with_server
from stockade.guardrail_ingest.main import create_app as create_ingest
from stockade.guardrail_ingest.settings import (
    ActiveStoreSettings,
    GuardrailIngestSettings,
    IngestSettings,
    SinkSettings,
    StreamSettings,
)
from stockade.guardrails.events import EventKind, GuardrailEvent
from stockade.guardrails.storage.config import StorageConfig
from stockade.guardrails.storage.sink import BackendGuardrailSink
from stockade.guardrails.storage.wire import RunInfo
from stockade.identity.keys import generate_key
from stockade.model_api.catalogue import actions
from stockade.model_api.main import create_app as create_model_api
from stockade.model_api.settings import ModelApiSettings, SessionSettings
from stockade.runtime.settings import DatabaseSettings, HttpSettings, NatsSettings
from stockade.testing.asgi import serving

pytestmark = [pytest.mark.e2e, pytest.mark.nats, pytest.mark.postgres, pytest.mark.clickhouse]
POST = "/api/v1/guardrails/clickhouse"


def ingest_settings(nats_url: str, clickhouse_dsn: str, table: str) -> GuardrailIngestSettings:
    return GuardrailIngestSettings(
        nats=NatsSettings(url=nats_url, startup_wait_s=5),
        http=HttpSettings(port=0),
        sink=SinkSettings(kind="clickhouse", clickhouse_url=clickhouse_dsn, table=table),
        active=ActiveStoreSettings(follow=False),
        # A long cache: a key refused soon after its revocation was dropped by the event, not by expiry.
        ingest=IngestSettings(key_cache_s=300),
        jetstream=StreamSettings(workers=1, fetch_timeout_s=0.3, retry_delay_s=0.3),
    )


def body(project_id: str | None, n: int = 3) -> dict[str, Any]:
    run_id = f"run-{uuid.uuid4().hex[:8]}"
    return {
        "run": {"run_id": run_id, "project_id": project_id},
        "events": [
            {
                "event_id": str(uuid.uuid4()),
                "kind": "check",
                "name": "pii",
                "action": "allow",
                "run_id": run_id,
                "occurred_at": datetime.now(UTC).isoformat(),
            }
            for _ in range(n)
        ],
    }


async def stored_events(clickhouse_client: Any, table: str, run_id: str) -> int:
    def count() -> int:
        if not int(clickhouse_client.command(f"EXISTS TABLE {table}")):
            return 0
        return int(clickhouse_client.command(f"SELECT count() FROM {table} WHERE run_id = '{run_id}'"))

    return await asyncio.to_thread(count)


async def test_ingest_needs_a_valid_key_of_the_batchs_project(
    nats_server_factory: Any,
    postgres_database: str,
    clickhouse_dsn: str,
    clickhouse_client: Any,
    unique_name: Callable[[str], str],
) -> None:
    nats_url = str(nats_server_factory().url)
    model_api = create_model_api(
        ModelApiSettings(
            db=DatabaseSettings(url=postgres_database),
            nats=NatsSettings(url=nats_url),
            session=SessionSettings(secure="auto"),
        )
    )
    table = unique_name("keys")
    ingest = create_ingest(ingest_settings(nats_url, clickhouse_dsn, table))
    async with serving(model_api):
        async with model_api.state.service.sessions() as s:
            user = await identity.create_user(s, f"{unique_name('agent')}@example.org")
            org = await identity.create_organisation(s, unique_name("org"))
            mine = await identity.create_project(s, org.id, "mine")
            theirs = await identity.create_project(s, org.id, "theirs")
            for project in (mine, theirs):
                await identity.add_project_member(s, project.id, user.id)
            key = await identity.create_api_key(s, user.id, scope="ingest", project=mine.id)
            write_key = await identity.create_api_key(s, user.id, scope="write")
            await s.commit()
        async with serving(ingest) as ingest_url, httpx.AsyncClient(base_url=ingest_url) as client:
            sent = {"X-API-Key": key.key}

            missing = await client.post(POST, json=body(mine.id))
            assert missing.status_code == 401, missing.text
            unknown = await client.post(
                POST, json=body(mine.id), headers={"X-API-Key": generate_key().plaintext}
            )
            assert unknown.status_code == 401 and "unknown key" in unknown.json()["error"]["message"]
            not_ingest = await client.post(POST, json=body(mine.id), headers={"X-API-Key": write_key.key})
            assert not_ingest.status_code == 401 and "not an ingest key" in not_ingest.text

            other = body(theirs.id)
            refused = await client.post(POST, json=other, headers=sent)
            assert refused.status_code == 403, refused.text
            assert theirs.id in refused.json()["error"]["message"]
            no_project = await client.post(POST, json=body(None), headers=sent)
            assert no_project.status_code == 403

            agent = BackendGuardrailSink(StorageConfig(enabled=True, backend_url=ingest_url, api_key=key.key))
            events = [GuardrailEvent(kind=EventKind.CHECK, name="pii", action="allow") for _ in range(4)]
            run = RunInfo(run_id=f"run-{uuid.uuid4().hex[:8]}", project_id=mine.id)
            outcome = await agent.send(run, events)
            assert outcome.error is None and outcome.sent == 4, outcome
            assert (await agent.send(run, events)).error is None  # resent: stored once all the same
            wrong = await agent.send(RunInfo(run_id="run-x", project_id=theirs.id), events[:1])
            assert wrong.sent == 0 and wrong.retryable is False and "403" in str(wrong.error)

            for _ in range(300):  # the sink worker writes asynchronously
                if await stored_events(clickhouse_client, table, run.run_id) >= 4:
                    break
                await asyncio.sleep(0.1)
            await asyncio.sleep(1.0)  # time for a second copy, were there one
            assert await stored_events(clickhouse_client, table, run.run_id) == 4
            assert await stored_events(clickhouse_client, table, other["run"]["run_id"]) == 0

            # Revoked in the console's way (stockade.identity, then apikey.revoked.v1 through the outbox): the
            # cached key (300 s) is refused as soon as the event reaches ingest.
            assert (await client.post(POST, json=body(mine.id), headers=sent)).status_code == 202
            async with model_api.state.service.sessions() as s:
                relay = model_api.state.service.own.relay
                await actions.revoke_own_key(s, relay, user.id, key.id)
            revoked_at = time.monotonic()
            status = 202
            while status == 202 and time.monotonic() - revoked_at < 10:
                status = (await client.post(POST, json=body(mine.id), headers=sent)).status_code
            took = time.monotonic() - revoked_at
            print(f"revocation to 401 at guardrail-ingest: {took * 1000:.0f} ms")
            assert status == 401
            assert took < 10  # far below the 300 s cache: the event did it


async def test_ingest_fails_closed_when_model_api_does_not_answer(
    nats_server_factory: Any, clickhouse_dsn: str, unique_name: Callable[[str], str]
) -> None:
    nats_url = str(nats_server_factory().url)
    settings = ingest_settings(nats_url, clickhouse_dsn, unique_name("keys"))
    settings.ingest.key_verify_timeout_s = 0.3
    ingest = create_ingest(settings)
    async with serving(ingest) as ingest_url, httpx.AsyncClient(base_url=ingest_url) as client:
        reply = await client.post(POST, json=body("p-1"), headers={"X-API-Key": generate_key().plaintext})
    assert reply.status_code == 503, reply.text
    assert reply.headers["retry-after"] == "1"
    assert "cannot be verified" in reply.json()["error"]["message"]


def flood_settings(nats_url: str, clickhouse_dsn: str, table: str, budget: int) -> GuardrailIngestSettings:
    settings = ingest_settings(nats_url, clickhouse_dsn, table)
    settings.ingest = IngestSettings(key_cache_s=300, key_failures_per_client=budget, key_failure_window_s=60)
    return settings


async def test_a_flood_of_bad_keys_is_cached_and_rate_limited_per_client(
    nats_server_factory: Any,
    postgres_database: str,
    clickhouse_dsn: str,
    unique_name: Callable[[str], str],
) -> None:
    """Before this change every request with a made-up key was one question to model-api on the bus, without
    limit: the same key asked about each time, and any number of keys from one address."""
    import nats

    nats_url = str(nats_server_factory().url)
    model_api = create_model_api(
        ModelApiSettings(
            db=DatabaseSettings(url=postgres_database),
            nats=NatsSettings(url=nats_url),
            session=SessionSettings(secure="auto"),
        )
    )
    budget = 4
    ingest = create_ingest(flood_settings(nats_url, clickhouse_dsn, unique_name("flood"), budget))
    watcher = await nats.connect(nats_url)
    questions: list[str] = []

    async def count(msg: Any) -> None:  # a copy of each question (no reply: model-api answers)
        questions.append(IngestKeyQuery.model_validate_json(msg.data).key_hash)

    await watcher.subscribe(subjects.APIKEY_CMD_VERIFY_INGEST, cb=count)
    await sync_with_server(watcher)

    async def asked_so_far() -> int:
        # A question is on the bus before its HTTP answer comes back, so the server has queued its copy to the
        # watcher before this PING: the copy is read before the PONG, then handed to `count` while we sleep.
        await sync_with_server(watcher)
        await asyncio.sleep(0.05)
        return len(questions)

    try:
        async with serving(model_api):
            async with model_api.state.service.sessions() as s:
                user = await identity.create_user(s, f"{unique_name('agent')}@example.org")
                org = await identity.create_organisation(s, unique_name("org"))
                mine = await identity.create_project(s, org.id, "mine")
                await identity.add_project_member(s, mine.id, user.id)
                good = await identity.create_api_key(s, user.id, scope="ingest", project=mine.id)
                write_key = await identity.create_api_key(s, user.id, scope="write")
                await s.commit()
            async with serving(ingest) as ingest_url, httpx.AsyncClient(base_url=ingest_url) as client:

                async def post(key: str | None, client_ip: str = "198.51.100.7") -> httpx.Response:
                    # serving() trusts X-Forwarded-For from loopback, as a service behind its proxy does
                    headers = {"X-Forwarded-For": client_ip} | ({"X-API-Key": key} if key else {})
                    return await client.post(POST, json=body(mine.id, n=1), headers=headers)

                assert (await post(good.key)).status_code == 202  # now in the positive cache

                # one bad key sent again and again: one question, then the refusal is remembered
                bad = generate_key().plaintext
                first = await post(bad, "198.51.100.1")
                assert first.status_code == 401 and "unknown key" in first.text
                again = await post(bad, "198.51.100.2")
                assert again.status_code == 401 and "unknown key" in again.text
                assert await asked_so_far() == 2  # the good key's and the bad key's, once

                # made-up keys from one address: `budget` failures, then 429 without a question
                before = len(questions)
                answers = [await post(generate_key().plaintext) for _ in range(budget + 3)]
                assert [a.status_code for a in answers] == [401] * budget + [429] * 3
                limited = answers[-1]
                assert limited.json()["error"]["code"] == "rate_limited"
                assert 1 <= int(limited.headers["retry-after"]) <= 60
                assert await asked_so_far() - before == budget
                # missing and malformed keys count as failures too, and are limited the same way
                assert (await post(None)).status_code == 429
                # the blocked address keeps its cached valid key; another address is not blocked
                assert (await post(good.key)).status_code == 202
                assert (await post(generate_key().plaintext, "203.0.113.9")).status_code == 401
                # concurrent attempts cannot overdraw a budget: each takes its failure before it is checked
                burst = await asyncio.gather(
                    *(post(generate_key().plaintext, "203.0.113.50") for _ in range(12))
                )
                assert sorted(a.status_code for a in burst) == [401] * budget + [429] * (12 - budget)

                # a refusal is dropped on apikey.revoked.v1 of its key, like a cached valid answer
                not_ingest = await post(write_key.key, "192.0.2.1")
                assert not_ingest.status_code == 401 and "not an ingest key" in not_ingest.text
                asked = await asked_so_far()
                assert (await post(write_key.key, "192.0.2.1")).status_code == 401
                assert await asked_so_far() == asked  # remembered
                await watcher.publish(
                    subjects.APIKEY_REVOKED, ApiKeyRevoked(key_id=write_key.id, owner_id=user.id).to_bytes()
                )
                await sync_with_server(watcher)
                # The event reaches ingest's own subscription some time later: ask (each time from another
                # address, so no budget runs out) until a question goes out, within a generous deadline.
                deadline = asyncio.get_running_loop().time() + 15
                for host in range(2, 250):
                    assert (await post(write_key.key, f"192.0.2.{host}")).status_code == 401
                    if await asked_so_far() > asked:
                        break
                    assert asyncio.get_running_loop().time() < deadline, "the refusal outlived apikey.revoked"
                    await asyncio.sleep(0.05)
                assert await asked_so_far() == asked + 1  # asked again, once
    finally:
        await watcher.close()


async def test_the_failure_limit_does_not_trust_forwarded_for_from_an_unlisted_peer(
    nats_server_factory: Any, clickhouse_dsn: str, unique_name: Callable[[str], str]
) -> None:
    """Behind no trusted proxy, a client cannot escape its budget by making up X-Forwarded-For addresses: the
    limit counts the address uvicorn gives the app (``http.proxy_headers`` / ``http.forwarded_allow_ips``)."""
    import uvicorn

    from stockade.testing.ports import free_port

    nats_url = str(nats_server_factory().url)
    settings = flood_settings(nats_url, clickhouse_dsn, unique_name("flood"), budget=2)
    settings.ingest.key_verify_timeout_s = 0.2  # no model-api: each question fails closed (503, not counted)
    settings.ingest.key_refused_cache_s = 0
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            create_ingest(settings), host="127.0.0.1", port=port, log_config=None, lifespan="on",
            proxy_headers=True, forwarded_allow_ips="192.0.2.10",  # as runtime.http.serve passes the settings
        )
    )  # fmt: skip
    task = asyncio.create_task(server.serve())
    try:
        while not server.started:
            assert not task.done(), task
            await asyncio.sleep(0.05)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
            # a silent model-api is not the client's failure: 503s leave the budget alone
            unavailable = [
                (
                    await client.post(POST, json=body("p-1"), headers={"X-API-Key": generate_key().plaintext})
                ).status_code
                for _ in range(3)
            ]
            statuses = [
                (
                    await client.post(
                        POST,
                        json=body("p-1"),
                        headers={"X-API-Key": "nope", "X-Forwarded-For": f"10.0.0.{i}"},
                    )
                ).status_code
                for i in range(4)
            ]
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, timeout=30)
    assert unavailable == [503, 503, 503]
    assert statuses == [401, 401, 429, 429]  # one budget, whatever X-Forwarded-For says
