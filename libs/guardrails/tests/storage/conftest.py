"""A scripted platform backend on a real socket (uvicorn in a thread): answers GET /api/v1/db_type and
POST /api/v1/guardrails/{db_type}, records every request, and plays a script of failure statuses first."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from stockade.testing.ports import free_port


@dataclass
class FakeBackend:
    url: str = ""
    db_type: str = "clickhouse"
    script: list[int] = field(default_factory=list)  # statuses to answer POSTs with before succeeding
    db_type_gets: int = 0
    posts: list[dict[str, Any]] = field(default_factory=list)  # every POST received (also failed ones)
    stored: dict[str, dict[str, Any]] = field(default_factory=dict)  # event_id -> event, like a real sink
    paths: list[str] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    fail_after: int | None = None  # after this many successful POSTs, answer 503 until reset
    successes: int = 0


def _app(backend: FakeBackend) -> Starlette:
    async def db_type(request: Request) -> JSONResponse:
        backend.db_type_gets += 1
        return JSONResponse({"db_type": backend.db_type})

    async def post(request: Request) -> JSONResponse:
        body = await request.json()
        backend.posts.append(body)
        backend.paths.append(request.url.path)
        backend.headers.append(dict(request.headers))
        if request.path_params["db_type"] != backend.db_type:
            return JSONResponse(
                {"error": {"code": "db_type_mismatch", "message": "other store"}}, status_code=409
            )
        if backend.script:
            status = backend.script.pop(0)
            return JSONResponse(
                {"error": {"code": "scripted", "message": f"scripted {status}"}}, status_code=status
            )
        if backend.fail_after is not None and backend.successes >= backend.fail_after:
            return JSONResponse({"error": {"code": "unavailable", "message": "down"}}, status_code=503)
        backend.successes += 1
        for event in body["events"]:
            backend.stored.setdefault(event["event_id"], {**event, "run": body["run"]})
        return JSONResponse(
            {"accepted": len(body["events"]), "batch_id": "b", "db_type": backend.db_type}, 202
        )

    return Starlette(
        routes=[
            Route("/api/v1/db_type", db_type),
            Route("/api/v1/guardrails/{db_type}", post, methods=["POST"]),
        ]
    )


@pytest.fixture
def backend() -> Iterator[FakeBackend]:
    port = free_port()
    fake = FakeBackend(url=f"http://127.0.0.1:{port}")
    server = uvicorn.Server(uvicorn.Config(_app(fake), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "fake backend did not start"
        time.sleep(0.02)
    yield fake
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture
def dead_url() -> str:
    """A URL where nothing listens (connection refused)."""
    return f"http://127.0.0.1:{free_port()}"
