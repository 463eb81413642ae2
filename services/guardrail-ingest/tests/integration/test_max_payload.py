"""Batches larger than the NATS server's max_payload, on a real nats-server started with a 64 KiB max_payload.

The run's labels are copied onto every queued record, so a small POST can grow past max_payload once queued:
NATS refused it, guardrail-ingest answered 503 and the library retried forever. Now the batch is split into
messages under max_payload, and an event that alone exceeds it is refused with 413 (the library counts it as
rejected and sends the rest).
"""

from __future__ import annotations

from typing import Any

import httpx
import nats
import pytest

from stockade.contracts import GuardrailEventsReceived, subjects
from stockade.guardrail_ingest.settings import SinkSettings
from stockade.guardrails.events import EventKind, GuardrailEvent
from stockade.guardrails.storage import FlushStatus, GuardrailsStorageHook, StorageConfig

pytestmark = [pytest.mark.nats]

MAX_PAYLOAD = 64 * 1024
STREAM = subjects.stream_for(subjects.GUARDRAIL_EVENTS)
LABELS = {f"label_{i:02d}": "v" * 200 for i in range(64)}  # ~14 KB, copied onto every record


@pytest.fixture
def small_nats_url(nats_server_factory: Any) -> str:
    return str(nats_server_factory(f"max_payload: {MAX_PAYLOAD}").url)


async def _queued(nats_url: str) -> list[tuple[int, GuardrailEventsReceived]]:
    """(size in bytes, message) of every message in the events stream."""
    nc = await nats.connect(nats_url)
    try:
        js = nc.jetstream()
        info = await js.stream_info(STREAM)
        out = []
        for seq in range(info.state.first_seq, info.state.last_seq + 1 if info.state.messages else 0):
            msg = await js.get_msg(STREAM, seq)
            out.append((len(msg.data or b""), GuardrailEventsReceived.model_validate_json(msg.data or b"")))
        return out
    finally:
        await nc.close()


async def test_a_batch_over_max_payload_is_queued_in_parts_each_under_it(
    small_nats_url: str, kit: Any
) -> None:
    settings = kit.settings(small_nats_url, SinkSettings(kind="clickhouse"), workers=0)
    body = kit.batch_body(40, run_id="run-big", labels=LABELS)
    assert len(str(body)) < MAX_PAYLOAD  # the request is small; the queued records are not
    async with kit.served(settings) as base, httpx.AsyncClient(base_url=base, timeout=30) as client:
        first = await client.post("/api/v1/guardrails/clickhouse", json=body)
        again = await client.post("/api/v1/guardrails/clickhouse", json=body)
    assert first.status_code == 202, first.text
    assert first.json()["accepted"] == 40 and first.json()["parts"] > 1
    assert again.status_code == 202 and again.json()["duplicate"] is True  # every part deduplicated
    queued = await _queued(small_nats_url)
    assert len(queued) == first.json()["parts"]
    assert all(size <= MAX_PAYLOAD - 1024 for size, _ in queued)
    events = [record["event_id"] for _, message in queued for record in message.events]
    assert sorted(events) == sorted(e["event_id"] for e in body["events"])  # all, each once
    assert all(r["labels"] == LABELS for _, m in queued for r in m.events)


async def test_an_event_that_alone_exceeds_max_payload_is_refused_with_413(
    small_nats_url: str, kit: Any
) -> None:
    settings = kit.settings(small_nats_url, SinkSettings(kind="clickhouse"), workers=0)
    body = kit.batch_body(3, run_id="run-huge", labels=LABELS)
    body["events"][1]["payload"] = {"blob": "x" * MAX_PAYLOAD}
    async with kit.served(settings) as base, httpx.AsyncClient(base_url=base, timeout=30) as client:
        reply = await client.post("/api/v1/guardrails/clickhouse", json=body)
    assert reply.status_code == 413, reply.text
    error = reply.json()["error"]
    assert error["code"] == "payload_too_large"
    assert body["events"][1]["event_id"] in error["message"]
    assert "shrink this event's payload or the run's labels" in error["message"]
    assert await _queued(small_nats_url) == []  # nothing of the batch was queued


async def test_the_library_sends_the_rest_and_reports_the_refused_event(
    small_nats_url: str, kit: Any
) -> None:
    settings = kit.settings(small_nats_url, SinkSettings(kind="clickhouse"), workers=0)
    async with kit.served(settings) as base:
        hook = GuardrailsStorageHook(
            StorageConfig(enabled=True, backend_url=base, batch_size=8, max_retries=1, backoff_initial_s=0),
            environ={},
        )
        hook.link_arms("proj-1", labels=LABELS)
        run_id = hook.begin_run()
        events = [
            GuardrailEvent(
                kind=EventKind.CHECK, name="pii", payload={"n": i} if i != 5 else {"x": "y" * 70_000}
            )
            for i in range(12)
        ]
        for event in events:
            hook.record(event)
        result = await hook.end_run(run_id)
    assert result.status is FlushStatus.REJECTED, result
    assert (result.sent, result.rejected, result.pending) == (11, 1, 0)
    assert result.error is not None and events[5].event_id in result.error and "413" in result.error
    assert hook.pending_runs() == {}  # nothing kept to be retried forever
    queued = {r["event_id"] for _, m in await _queued(small_nats_url) for r in m.events}
    assert queued == {e.event_id for i, e in enumerate(events) if i != 5}
