"""The shared observability pieces on real sockets: a create_service_app service's /metrics (route templates,
bounded labels, no credentials), the trace id on log lines, the standalone MetricsServer, the outbox relay's
backlog gauge and traceparent on a real NATS and database."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from stockade.runtime.app import create_service_app
from stockade.runtime.logging import configure_logging
from stockade.runtime.metrics import MetricsServer
from stockade.runtime.settings import LogSettings, ServiceSettings
from stockade.runtime.tracing import consumer_span, current_trace_id, inject
from stockade.testing.ports import free_port

TRACE_ID = "6bf92f3577b34da6a3ce929d0e0e4736"


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


@asynccontextmanager
async def served(app: FastAPI) -> AsyncIterator[str]:
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, port=port, log_config=None, lifespan="on"))
    task = asyncio.create_task(server.serve())
    try:
        while not server.started:
            assert not task.done(), "server stopped"
            await asyncio.sleep(0.02)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, timeout=10)


def _app(service: str, access_log: bool = False) -> FastAPI:
    settings = ServiceSettings(service_name=service, log=LogSettings(access_log=access_log))
    app = create_service_app(settings, title=service, health_subject=None, uses_db=False, uses_nats=False)

    @app.get("/items/{item_id}")
    async def item(item_id: str) -> dict[str, str]:
        logging.getLogger("test.item").info("looking up %s", item_id)
        return {"item_id": item_id, "trace_id": current_trace_id() or ""}

    return app


def _samples(text: str, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    return {
        tuple(sorted(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name
    }


async def test_metrics_label_requests_by_route_template_and_bound_methods() -> None:
    async with served(_app("obs-a")) as base, httpx.AsyncClient(base_url=base) as client:
        for item in ("id-1111", "id-2222", "id-3333"):
            assert (await client.get(f"/items/{item}")).status_code == 200
        assert (await client.request("PROPFIND", "/items/x")).status_code == 405
        assert (await client.get("/scan/etc/passwd-7777")).status_code == 404
        reply = await client.get("/metrics")
    assert reply.status_code == 200 and "text/plain" in reply.headers["content-type"]
    counts = _samples(reply.text, "stockade_http_request_duration_seconds_count")
    mine = {
        dict(k)["route"] + " " + dict(k)["method"] + " " + dict(k)["status"]: v
        for k, v in counts.items()
        if dict(k)["service"] == "obs-a"
    }
    assert mine["/items/{item_id} GET 200"] == 3
    assert mine["/items/{item_id} OTHER 405"] == 1
    assert mine["<unmatched> GET 404"] == 1
    for raw in ("id-1111", "passwd-7777", "PROPFIND"):
        assert raw not in reply.text


async def test_a_request_continues_the_callers_trace_in_its_log_lines() -> None:
    with captured_logs("obs-b") as out:
        async with served(_app("obs-b", access_log=True)) as base, httpx.AsyncClient(base_url=base) as client:
            traced = await client.get(
                "/items/a", headers={"traceparent": f"00-{TRACE_ID}-b7ad6b7169203331-01"}
            )
            fresh = await client.get("/items/b")
    assert traced.json()["trace_id"] == TRACE_ID
    assert len(fresh.json()["trace_id"]) == 32 and fresh.json()["trace_id"] != TRACE_ID
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    by_trace = {line.get("trace_id"): line for line in lines if line["logger"] == "test.item"}
    assert by_trace[TRACE_ID]["msg"] == "looking up a"
    assert by_trace[fresh.json()["trace_id"]]["msg"] == "looking up b"
    access = [line for line in lines if line["logger"] == "stockade.access"]
    assert {line["trace_id"] for line in access} == {TRACE_ID, fresh.json()["trace_id"]}
    assert {line["route"] for line in access} == {"/items/{item_id}"}


def test_human_readable_lines_end_with_the_trace_id() -> None:
    with captured_logs("obs-c", json_format=False) as out:
        with consumer_span("test", {"traceparent": f"00-{TRACE_ID}-b7ad6b7169203331-01"}):
            logging.getLogger("test.text").info("inside")
        logging.getLogger("test.text").info("outside")
    inside, outside = out.getvalue().splitlines()
    assert inside.endswith(f"inside trace={TRACE_ID}") and outside.endswith("outside")


def test_consumer_span_carries_the_trace_into_published_headers() -> None:
    with consumer_span("test", {"traceparent": f"00-{TRACE_ID}-b7ad6b7169203331-01"}) as span:
        assert span is not None
        headers = inject({"Nats-Msg-Id": "x"})
    assert headers["traceparent"].startswith(f"00-{TRACE_ID}-") and headers["Nats-Msg-Id"] == "x"
    with consumer_span("test", {}) as span:  # no traceparent: no span, nothing injected
        assert span is None and "traceparent" not in inject({})


async def test_the_standalone_metrics_server_answers_on_its_port() -> None:
    server = MetricsServer("127.0.0.1", 0, "obs-d")
    await server.start()
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.port}") as client:
            metrics = await client.get("/metrics")
            health = await client.get("/healthz")
    finally:
        await server.stop()
    assert metrics.status_code == 200 and "process_cpu_seconds_total" in metrics.text
    assert health.json() == {"status": "ok", "service": "obs-d"}
    with pytest.raises(httpx.ConnectError):
        async with httpx.AsyncClient() as client:
            await client.get(f"http://127.0.0.1:{server.port}/metrics")
    assert REGISTRY.get_sample_value("process_cpu_seconds_total") is not None
