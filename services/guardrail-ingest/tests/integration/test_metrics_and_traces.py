"""guardrail-ingest's metrics and trace context on real servers: stored check decisions counted by check and
action on /metrics, the sink consumer's lag sampled from JetStream, a POST's traceparent on the queued batch."""

from __future__ import annotations

from typing import Any

import httpx
import nats
import pytest
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from stockade.contracts import GuardrailEventsReceived, subjects
from stockade.guardrail_ingest.jetstream import ensure_stream
from stockade.guardrail_ingest.metrics import JetStreamSampler
from stockade.guardrail_ingest.settings import ActiveStoreSettings, SinkSettings, StreamSettings
from stockade.guardrail_ingest.worker import consumer_config

pytestmark = [pytest.mark.nats]

TRACE_ID = "5bf92f3577b34da6a3ce929d0e0e4736"


def _value(text: str, name: str, labels: dict[str, str]) -> float:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and sample.labels == labels:
                return float(sample.value)
    return 0.0


def _decisions(text: str, check: str, action: str) -> float:
    return _value(text, "stockade_guardrail_check_decisions_total", {"check": check, "action": action})


@pytest.mark.clickhouse
async def test_stored_check_decisions_are_counted_by_check_and_action(
    fresh_nats_url: str, clickhouse_dsn: str, unique_name: Any, kit: Any
) -> None:
    store = SinkSettings(kind="clickhouse", clickhouse_url=clickhouse_dsn, table=unique_name("obs"))
    settings = kit.settings(fresh_nats_url, store)
    settings.active = ActiveStoreSettings(follow=False)
    body = kit.batch_body(0, run_id="run-obs")
    body["events"] = [
        *(kit.wire_event("run-obs", name="pii_obs", action="block") for _ in range(3)),
        kit.wire_event("run-obs", name="jailbreak_obs", action="allow"),
        kit.wire_event("run-obs", kind="generate", name="llm", action="allow"),  # not a check
    ]
    async with kit.served(settings) as base, httpx.AsyncClient(base_url=base) as client:
        before = (await client.get("/metrics")).text
        accepted = await client.post("/api/v1/guardrails/clickhouse", json=body)
        assert accepted.status_code == 202, accepted.text

        async def stored() -> bool:
            return bool((await client.get("/api/v1/status")).json()["inserted"] == 5)

        assert await kit.wait_for(stored, within_s=30)
        after = (await client.get("/metrics")).text
    assert _decisions(after, "pii_obs", "block") == _decisions(before, "pii_obs", "block") + 3
    assert _decisions(after, "jailbreak_obs", "allow") == _decisions(before, "jailbreak_obs", "allow") + 1
    assert _decisions(after, "llm", "allow") == 0
    stored_checks = _value(after, "stockade_guardrail_events_stored_total", {"kind": "check"})
    assert stored_checks - _value(before, "stockade_guardrail_events_stored_total", {"kind": "check"}) == 4
    route = {"service": "guardrail-ingest", "method": "POST", "route": "/api/v1/guardrails/{db_type}"}
    assert _value(after, "stockade_http_request_duration_seconds_count", {**route, "status": "202"}) >= 1


def _pending(stream: str) -> float | None:
    labels = {"stream": stream, "consumer": "lag-probe"}
    return REGISTRY.get_sample_value("stockade_jetstream_consumer_pending_messages", labels)


async def test_consumer_lag_is_sampled_from_jetstream(fresh_nats_url: str, kit: Any) -> None:
    settings = StreamSettings(durable="lag-probe")
    nc = await nats.connect(fresh_nats_url)
    try:
        js = nc.jetstream()
        await ensure_stream(js, settings)
        await js.add_consumer(settings.stream, consumer_config(settings))
        sampler = JetStreamSampler(js, settings)
        await sampler.sample()
        assert _pending(settings.stream) == 0
        for i in range(3):
            batch = GuardrailEventsReceived(db_type="clickhouse", events=[{"event_id": f"e{i}"}])
            await js.publish(settings.subject, batch.to_bytes(), stream=settings.stream)
        await sampler.sample()
        assert _pending(settings.stream) == 3
    finally:
        await nc.close()


async def test_a_posts_traceparent_travels_on_the_queued_batch(fresh_nats_url: str, kit: Any) -> None:
    settings = kit.settings(fresh_nats_url, SinkSettings(kind="clickhouse"), workers=0)
    settings.active = ActiveStoreSettings(follow=False)
    traceparent = f"00-{TRACE_ID}-a2fb4a1d1a96d312-01"
    async with kit.served(settings) as base, httpx.AsyncClient(base_url=base) as client:
        accepted = await client.post(
            "/api/v1/guardrails/clickhouse", json=kit.batch_body(2), headers={"traceparent": traceparent}
        )
        assert accepted.status_code == 202, accepted.text
    nc = await nats.connect(fresh_nats_url)
    try:
        stream = subjects.stream_for(subjects.GUARDRAIL_EVENTS)
        info = await nc.jetstream().stream_info(stream)
        queued = await nc.jetstream().get_msg(stream, info.state.last_seq)
    finally:
        await nc.close()
    version, trace_id, parent, flags = (queued.headers or {})["traceparent"].split("-")
    assert (version, trace_id, flags) == ("00", TRACE_ID, "01") and parent != "a2fb4a1d1a96d312"
