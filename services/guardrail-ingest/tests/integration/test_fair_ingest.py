"""Fair ingest (review N3): one ingest key flooding gets 429 with Retry-After while another project's
events are accepted and stored, each with the id of the key that wrote it; and when the dead-letter stream does
not take a refused event, the batch is given up after a bounded number of deliveries instead of forever.

Real servers: a nats-server per test, chdb (or CLICKHOUSE_URL), guardrail-ingest served by uvicorn, and a
model-api stand-in answering apikey.cmd.verify_ingest.v1 on the bus as model-api does.
"""

from __future__ import annotations

import asyncio
import secrets
import uuid
from collections.abc import Callable
from typing import Any

import httpx
import nats
import pytest

from stockade.contracts import GuardrailEventsReceived, subjects
from stockade.contracts.envelope import IngestKeyQuery, IngestKeyVerdict
from stockade.contracts.nats_sync import sync_with_server
from stockade.guardrail_ingest.jetstream import ensure_stream, publish_batch
from stockade.guardrail_ingest.quotas import QuotaSettings
from stockade.guardrail_ingest.settings import IngestSettings, SinkSettings, StreamSettings
from stockade.guardrail_ingest.worker import SinkWorker

pytestmark = [pytest.mark.nats, pytest.mark.clickhouse]

PROJECTS = {"A" * 12: "proj-a", "B" * 12: "proj-b"}  # key id -> the project model-api says it belongs to


def key_for(key_id: str) -> str:
    return (
        "stk_" + key_id + secrets.token_hex(19)
    )  # the ingest key format; model-api's answer decides the rest


async def model_api_stand_in(url: str) -> Any:
    async def answer(msg: Any) -> None:
        query = IngestKeyQuery.model_validate_json(msg.data)
        project = PROJECTS.get(query.key_id)
        verdict = IngestKeyVerdict(
            valid=project is not None, reason="ingest key", key_id=query.key_id, project_id=project
        )
        await msg.respond(verdict.model_dump_json().encode())

    nc = await nats.connect(url)
    await nc.subscribe(subjects.APIKEY_CMD_VERIFY_INGEST, cb=answer)
    await sync_with_server(nc)
    return nc


async def test_a_flooding_key_gets_429_while_another_projects_events_are_stored(
    fresh_nats_url: str,
    clickhouse_dsn: str,
    clickhouse_client: Any,
    unique_name: Callable[[str], str],
    kit: Any,
) -> None:
    table = unique_name("fair")
    # One event per second after a burst of 30: the fourth batch of 10 within a second is over the quota.
    quotas = QuotaSettings(
        key_events_per_s=1, key_events_burst=30, project_events_per_s=1, project_events_burst=30
    )
    settings = kit.settings(
        fresh_nats_url,
        SinkSettings(kind="clickhouse", url=clickhouse_dsn, table=table),
        workers=1,
        ingest=IngestSettings(auth="keys", quotas=quotas),
    )
    settings.active.follow = False
    model_api = await model_api_stand_in(fresh_nats_url)
    flooder, other = {"X-API-Key": key_for("A" * 12)}, {"X-API-Key": key_for("B" * 12)}
    try:
        async with kit.served(settings) as base, httpx.AsyncClient(base_url=base, timeout=10) as client:
            url = "/api/v1/guardrails/clickhouse"
            answers = []
            for i in range(20):  # the flood: stops at the first refusal (bounded)
                r = await client.post(
                    url, json=kit.batch_body(10, f"flood-{i}", project_id="proj-a"), headers=flooder
                )
                answers.append(r)
                if r.status_code == 429:
                    break
            assert [r.status_code for r in answers[:3]] == [202, 202, 202]
            refused = answers[-1]
            assert refused.status_code == 429, [r.status_code for r in answers]
            assert int(refused.headers["Retry-After"]) >= 1
            assert "quota" in refused.text
            # Another project's key, at the same moment: accepted, and stored.
            accepted = [
                await client.post(
                    url, json=kit.batch_body(10, f"other-{i}", project_id="proj-b"), headers=other
                )
                for i in range(3)
            ]
            assert [r.status_code for r in accepted] == [202, 202, 202]
            # The flooder is still refused while its bucket refills.
            again = await client.post(
                url, json=kit.batch_body(10, "flood-x", project_id="proj-a"), headers=flooder
            )
            assert again.status_code == 429

            async def stored() -> list[tuple[str, str | None, int]]:
                query = (
                    f"SELECT project_id, ingest_key_id, count() FROM {table} FINAL GROUP BY 1, 2 ORDER BY 1"
                )
                rows = await asyncio.to_thread(lambda: clickhouse_client.query(query).result_rows)
                return [tuple(r) for r in rows] if sum(r[2] for r in rows) == 60 else []

            rows = await kit.wait_for(stored, within_s=30)
    finally:
        await model_api.close()
    # Every stored event names the key that wrote it; nothing of the refused batches was stored.
    assert rows == [("proj-a", "A" * 12, 30), ("proj-b", "B" * 12, 30)]
    await asyncio.to_thread(clickhouse_client.command, f"DROP TABLE IF EXISTS {table}")


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
        "labels": {},
        "received_at": "2026-11-22T12:00:01+00:00",
        "ingest_key_id": "K" * 12,
    }


async def test_a_refused_event_the_dead_letter_stream_does_not_take_is_dropped_after_a_bound(
    fresh_nats_url: str, clickhouse_dsn: str, clickhouse_client: Any, unique_name: Callable[[str], str]
) -> None:
    from prometheus_client import REGISTRY

    from stockade.guardrail_ingest.sinks.clickhouse import ClickHouseSink

    settings = StreamSettings(
        ack_wait_s=5.0,
        fetch_timeout_s=0.3,
        retry_delay_s=0.1,
        dead_letter_after=2,
        dead_letter_give_up_after=2,
    )
    table = unique_name("dlfull")
    sink = ClickHouseSink(clickhouse_dsn, table)
    await sink.ensure_schema()
    # The store refuses payloads over 10 kB (a constraint added by hand), and the dead-letter stream is gone.
    await asyncio.to_thread(
        clickhouse_client.command, f"ALTER TABLE {table} ADD CONSTRAINT small CHECK length(payload) < 10000"
    )
    nc = await nats.connect(fresh_nats_url)
    js = nc.jetstream()
    await ensure_stream(js, settings)
    await js.delete_stream(settings.dead_letter_stream)
    good, bad = _record({"n": 1}), _record({"blob": "x" * 20_000})
    await publish_batch(
        js, settings, GuardrailEventsReceived(db_type="clickhouse", events=[good, bad]), timeout_s=5
    )
    dropped_before = REGISTRY.get_sample_value("guardrail_ingest_events_dropped_total") or 0.0
    worker = SinkWorker(js, sink, settings)
    task = asyncio.create_task(worker.run())
    try:
        deadline = asyncio.get_running_loop().time() + 30
        while not (worker.stats.dropped == 1 and worker.stats.batches == 1):
            assert asyncio.get_running_loop().time() < deadline, worker.stats
            await asyncio.sleep(0.1)
        await asyncio.sleep(1.0)  # a batch still nak'ed would come back within retry_delay_s
        info = await js.consumer_info(settings.stream, settings.durable)
    finally:
        worker.stop()
        await asyncio.wait_for(task, timeout=10)
        await nc.close()
    assert worker.stats.batches == 1 and worker.stats.dropped == 1 and worker.stats.dead_lettered == 0
    assert info.num_ack_pending == 0 and info.num_redelivered <= 4  # given up at delivery 2 + 2, acknowledged
    assert REGISTRY.get_sample_value("guardrail_ingest_events_dropped_total") == dropped_before + 1
    rows = await asyncio.to_thread(
        lambda: clickhouse_client.query(f"SELECT event_id FROM {table}").result_rows
    )
    assert [r[0] for r in rows] == [good["event_id"]]  # the batch's storable event was stored, once
    await asyncio.to_thread(clickhouse_client.command, f"DROP TABLE IF EXISTS {table}")
    await sink.aclose()
