"""Shared helpers: a guardrail-ingest app served by uvicorn on a real socket, on a fresh NATS server per test."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import pytest
import uvicorn

from stockade.guardrail_ingest.main import create_app
from stockade.guardrail_ingest.settings import (
    GuardrailIngestSettings,
    IngestSettings,
    SinkSettings,
    StreamSettings,
)
from stockade.runtime.settings import DatabaseSettings, HttpSettings, NatsSettings
from stockade.testing.ports import free_port


@pytest.fixture
def fresh_nats_url(nats_server_factory: Any) -> str:
    """A NATS server of its own per test: streams and durable consumers never leak between tests."""
    return str(nats_server_factory().url)


def ingest_settings(
    nats_url: str,
    sink: SinkSettings,
    *,
    workers: int = 1,
    ack_wait_s: float = 30.0,
    ingest: IngestSettings | None = None,
) -> GuardrailIngestSettings:
    """Settings on a real NATS server. Authentication is off (``auth="open"``) unless ``ingest`` sets ``auth``:
    these tests are about storage; tests/e2e/test_ingest_keys.py covers per-project keys with model-api."""
    ingest = ingest or IngestSettings()
    if "auth" not in ingest.model_fields_set:
        ingest = ingest.model_copy(update={"auth": "open"})
    return GuardrailIngestSettings(
        nats=NatsSettings(url=nats_url, startup_wait_s=5),
        db=DatabaseSettings(url="sqlite+aiosqlite:///:memory:"),
        http=HttpSettings(port=free_port()),
        sink=sink,
        ingest=ingest,
        jetstream=StreamSettings(
            workers=workers, ack_wait_s=ack_wait_s, fetch_timeout_s=0.3, retry_delay_s=0.3
        ),
    )


@asynccontextmanager
async def served(settings: GuardrailIngestSettings) -> AsyncIterator[str]:
    """Serve create_app(settings) on 127.0.0.1; yield its base URL; stop it (lifespan shutdown) afterwards."""
    port = settings.http.port
    server = uvicorn.Server(uvicorn.Config(create_app(settings), port=port, log_config=None, lifespan="on"))
    task = asyncio.create_task(server.serve())
    try:
        for _ in range(400):
            if server.started or task.done():
                break
            await asyncio.sleep(0.025)
        if task.done():
            task.result()
        assert server.started, "guardrail-ingest did not start"
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, timeout=30)


def wire_event(run_id: str = "run-1", **over: Any) -> dict[str, Any]:
    event = {
        "event_id": str(uuid.uuid4()),
        "kind": "check",
        "name": "pii",
        "occurred_at": datetime.now(UTC).isoformat(),
        "session_id": "s-1",
        "run_id": run_id,
        "action": "mask",
        "payload": {"entity_types": ["EMAIL_ADDRESS"], "score": 0.93},
    }
    event.update(over)
    return event


def batch_body(n: int, run_id: str = "run-1", **run: Any) -> dict[str, Any]:
    return {
        "run": {"run_id": run_id, "project_id": "proj-1", **run},
        "events": [wire_event(run_id) for _ in range(n)],
    }


async def wait_for(check: Callable[[], Any], within_s: float = 15.0, interval: float = 0.1) -> Any:
    """Poll an (async or sync) check until it returns something truthy; fail with the last value."""
    deadline = asyncio.get_running_loop().time() + within_s
    while True:
        value = check()
        if asyncio.iscoroutine(value):
            value = await value
        if value or asyncio.get_running_loop().time() > deadline:
            return value
        await asyncio.sleep(interval)


class Kit:
    """The helpers above, as a fixture (tests cannot import conftest under --import-mode=importlib)."""

    settings = staticmethod(ingest_settings)
    served = staticmethod(served)
    wire_event = staticmethod(wire_event)
    batch_body = staticmethod(batch_body)
    wait_for = staticmethod(wait_for)


@pytest.fixture
def kit() -> type[Kit]:
    return Kit
