"""POST /api/v1/guardrails/{db_type} and GET /api/v1/db_type over a real socket, against a real JetStream.

Sink workers are off here (workers=0): these tests look at what lands in the stream.
"""

from __future__ import annotations

import json

import httpx
import nats
import pytest

from stockade.contracts import GuardrailEventsReceived, subjects
from stockade.guardrail_ingest.settings import IngestSettings, SinkSettings

pytestmark = [pytest.mark.nats]

STREAM = subjects.stream_for(subjects.GUARDRAIL_EVENTS)


async def _stream_messages(nats_url: str) -> list[GuardrailEventsReceived]:
    nc = await nats.connect(nats_url)
    try:
        js = nc.jetstream()
        info = await js.stream_info(STREAM)
        out = []
        for seq in range(info.state.first_seq, info.state.last_seq + 1):
            if info.state.messages == 0:
                break
            msg = await js.get_msg(STREAM, seq)
            out.append(GuardrailEventsReceived.model_validate_json(msg.data))
        return out
    finally:
        await nc.close()


async def test_db_type_names_the_configured_store(fresh_nats_url, kit):
    for kind in ("clickhouse", "dynamodb"):
        settings = kit.settings(fresh_nats_url, SinkSettings(kind=kind), workers=0)
        async with kit.served(settings) as base, httpx.AsyncClient(base_url=base) as client:
            reply = await client.get("/api/v1/db_type")
            assert reply.status_code == 200 and reply.json() == {"db_type": kind}


async def test_batch_is_queued_once_even_when_the_post_is_retried(fresh_nats_url, kit):
    settings = kit.settings(fresh_nats_url, SinkSettings(kind="clickhouse"), workers=0)
    body = kit.batch_body(3, run_id="run-a", agent_id="planner", labels={"team": "risk"})
    async with kit.served(settings) as base, httpx.AsyncClient(base_url=base) as client:
        first = await client.post("/api/v1/guardrails/clickhouse", json=body)
        again = await client.post("/api/v1/guardrails/clickhouse", json=body)
    assert first.status_code == 202, first.text
    assert first.json()["accepted"] == 3 and first.json()["duplicate"] is False
    assert again.status_code == 202 and again.json()["duplicate"] is True
    assert again.json()["batch_id"] == first.json()["batch_id"]
    [queued] = await _stream_messages(fresh_nats_url)
    assert str(queued.event_id) == first.json()["batch_id"] and queued.db_type == "clickhouse"
    assert queued.correlation_id == "run-a"
    assert sorted(r["event_id"] for r in queued.events) == sorted(e["event_id"] for e in body["events"])
    record = queued.events[0]
    assert record["project_id"] == "proj-1" and record["agent_id"] == "planner"
    assert record["labels"] == {"team": "risk"} and record["payload"]["entity_types"] == ["EMAIL_ADDRESS"]


async def test_errors_have_the_house_shape_and_documented_statuses(fresh_nats_url, kit):
    limits = IngestSettings(max_events=5, max_body_bytes=20_000)
    settings = kit.settings(fresh_nats_url, SinkSettings(kind="mongodb"), workers=0, ingest=limits)
    async with kit.served(settings) as base, httpx.AsyncClient(base_url=base) as client:
        unknown = await client.post("/api/v1/guardrails/postgres", json=kit.batch_body(1))
        assert unknown.status_code == 400 and unknown.json()["error"]["code"] == "unknown_db_type"

        mismatch = await client.post("/api/v1/guardrails/dynamodb", json=kit.batch_body(1))
        assert mismatch.status_code == 409
        assert mismatch.json()["error"]["code"] == "db_type_mismatch"
        assert "mongodb" in mismatch.json()["error"]["message"]

        too_many = await client.post("/api/v1/guardrails/mongodb", json=kit.batch_body(6))
        assert too_many.status_code == 413 and "cap is 5" in too_many.json()["error"]["message"]

        big = kit.batch_body(1)
        big["events"][0]["payload"] = {"blob": "x" * 30_000}
        too_big = await client.post("/api/v1/guardrails/mongodb", json=big)
        assert too_big.status_code == 413 and too_big.json()["error"]["code"] == "payload_too_large"

        bad = kit.batch_body(1)
        bad["events"][0]["occurred_at"] = "2026-01-01T00:00:00"  # naive: no offset
        del bad["events"][0]["kind"]
        invalid = await client.post("/api/v1/guardrails/mongodb", json=bad)
        assert invalid.status_code == 422
        message = invalid.json()["error"]["message"]
        assert "events.0.kind" in message and "events.0.occurred_at" in message

        not_json = await client.post(
            "/api/v1/guardrails/mongodb", content=b"{nope", headers={"content-type": "application/json"}
        )
        assert not_json.status_code == 422 and "invalid JSON" in not_json.json()["error"]["message"]

        empty = await client.post("/api/v1/guardrails/mongodb", json={"run": {"run_id": "r"}, "events": []})
        assert empty.status_code == 422
    assert await _stream_messages(fresh_nats_url) == []


async def test_the_deployment_wide_key_is_accepted_and_nothing_else_without_model_api(fresh_nats_url, kit):
    settings = kit.settings(
        fresh_nats_url,
        SinkSettings(kind="clickhouse"),
        workers=0,
        ingest=IngestSettings(auth="keys", api_key="k" * 32),
    )
    async with kit.served(settings) as base, httpx.AsyncClient(base_url=base) as client:
        missing = await client.post("/api/v1/guardrails/clickhouse", json=kit.batch_body(1))
        wrong = await client.post(
            "/api/v1/guardrails/clickhouse", json=kit.batch_body(1), headers={"X-API-Key": "x"}
        )
        right = await client.post(
            "/api/v1/guardrails/clickhouse", json=kit.batch_body(1), headers={"X-API-Key": "k" * 32}
        )
    assert missing.status_code == 401 and wrong.status_code == 401
    assert "missing X-API-Key" in missing.json()["error"]["message"]
    assert right.status_code == 202


async def test_unknown_fields_and_kinds_are_accepted(fresh_nats_url, kit):
    settings = kit.settings(fresh_nats_url, SinkSettings(kind="clickhouse"), workers=0)
    body = kit.batch_body(0)
    body["events"] = [kit.wire_event(kind="future_kind", shiny_new_field=1)]
    body["run"]["also_new"] = True
    async with kit.served(settings) as base, httpx.AsyncClient(base_url=base) as client:
        reply = await client.post("/api/v1/guardrails/clickhouse", json=body)
    assert reply.status_code == 202, reply.text
    [queued] = await _stream_messages(fresh_nats_url)
    assert queued.events[0]["kind"] == "future_kind" and "shiny_new_field" not in queued.events[0]


async def test_503_when_jetstream_cannot_take_the_batch(fresh_nats_url, kit):
    settings = kit.settings(fresh_nats_url, SinkSettings(kind="clickhouse"), workers=0)
    async with kit.served(settings) as base, httpx.AsyncClient(base_url=base) as client:
        nc = await nats.connect(fresh_nats_url)
        await nc.jetstream().delete_stream(STREAM)
        await nc.close()
        reply = await client.post("/api/v1/guardrails/clickhouse", json=kit.batch_body(2))
    assert reply.status_code == 503, reply.text
    assert json.loads(reply.text)["error"]["code"] == "unavailable" and reply.headers["retry-after"] == "1"
