"""Metrics and trace context of prompt-api: routes by template on /metrics, a caller's traceparent on the access
log line and on the prompt.published.v1 message the outbox relay sends (real NATS, SQLite and PostgreSQL)."""

import asyncio
import io
import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager

import nats
import pytest
from prometheus_client.parser import text_string_to_metric_families

from stockade.contracts.subjects import PROMPT_PUBLISHED_WILDCARD
from stockade.prompt_api.settings import OutboxSettings
from stockade.runtime.logging import configure_logging
from stockade.runtime.settings import LogSettings

PUBLISH = "/prompts/active-prompt-version"
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"


@contextmanager
def captured_logs(service: str, json_format: bool = True) -> Iterator[io.StringIO]:
    """Lines of configure_logging's own handler (with its trace filter), written to a buffer; the root
    logger's handlers and level are restored afterwards."""
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    out = io.StringIO()
    configure_logging(service, "INFO", json_format, stream=out)
    try:
        yield out
    finally:
        for handler in [h for h in root.handlers if h not in handlers]:
            root.removeHandler(handler)
        for handler in handlers:
            if handler not in root.handlers:
                root.addHandler(handler)
        root.setLevel(level)


def _count(metrics: str, **labels: str) -> float:
    """The value of stockade_http_request_duration_seconds_count with exactly these labels (0 if absent)."""
    for family in text_string_to_metric_families(metrics):
        for sample in family.samples:
            if sample.name == "stockade_http_request_duration_seconds_count" and sample.labels == labels:
                return float(sample.value)
    return 0.0


async def test_requests_show_on_metrics_by_route_template(client, world):
    labels = {
        "method": "GET",
        "route": "/prompts/{prompt_name}/versions",
        "service": "prompt-api",
        "status": "200",
    }
    before = _count((await client.get("/metrics")).text, **labels)
    for name in ("alpha-7d1e", "beta-93c2"):
        published = await client.post(
            PUBLISH,
            headers={"X-API-Key": world.write_key},
            json={"project_id": world.direct.id, "prompt_name": name, "content": "x"},
        )
        assert published.status_code == 201
        r = await client.get(
            f"/prompts/{name}/versions",
            params={"project_id": world.direct.id},
            headers={"X-API-Key": world.read_key},
        )
        assert r.status_code == 200
    r = await client.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    assert _count(r.text, **labels) == before + 2
    assert "alpha-7d1e" not in r.text and "beta-93c2" not in r.text  # never the raw path
    await client.get("/no/such/route/9f8e")
    r = await client.get("/metrics")
    assert _count(r.text, method="GET", route="<unmatched>", service="prompt-api", status="404") >= 1
    assert "9f8e" not in r.text
    assert "/metrics" not in (await client.get("/openapi.json")).text  # outside the API document


@pytest.mark.nats
async def test_traceparent_reaches_the_log_line_and_the_published_event(app_factory, world, nats_url):
    client = await app_factory(
        nats_url=nats_url,
        outbox=OutboxSettings(enabled=True, interval_s=0.2),
        log=LogSettings(access_log=True),
    )
    with captured_logs("prompt-api") as out:
        r = await client.post(
            PUBLISH,
            headers={"X-API-Key": world.write_key, "traceparent": TRACEPARENT},
            json={"project_id": world.direct.id, "prompt_name": "traced", "content": "a"},
        )
        assert r.status_code == 201
        for _ in range(150):  # the relay sends it (and makes the stream) after the commit
            if client.app.state.service.own.relay.sent:
                break
            await asyncio.sleep(0.1)
    nc = await nats.connect(nats_url)
    try:
        sub = await nc.jetstream().subscribe(PROMPT_PUBLISHED_WILDCARD, ordered_consumer=True)
        while True:  # the stream may hold other tests' events: find this one
            msg = await sub.next_msg(timeout=15)
            if json.loads(msg.data)["project_id"] == world.direct.id:
                break
        await sub.unsubscribe()
    finally:
        await nc.close()
    version, trace_id, parent, flags = msg.headers["traceparent"].split("-")
    assert (version, trace_id, flags) == ("00", TRACE_ID, "01")
    assert parent != "00f067aa0ba902b7"  # the server span's id: the caller's span is its parent
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    access = [line for line in lines if line["logger"] == "stockade.access" and line["route"] == PUBLISH]
    assert access and access[0]["trace_id"] == TRACE_ID and access[0]["status"] == 201
    assert access[0]["span_id"] == parent


async def test_a_request_without_traceparent_gets_a_trace_id_of_its_own(app_factory, world):
    client = await app_factory(log=LogSettings(access_log=True))
    with captured_logs("prompt-api") as out:
        await client.get("/healthz")
        await client.get("/healthz")
    ids = [json.loads(line).get("trace_id") for line in out.getvalue().splitlines()]
    ids = [i for i in ids if i]
    assert len(ids) == 2 and ids[0] != ids[1] and all(len(i) == 32 for i in ids)
