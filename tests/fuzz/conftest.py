"""Fuzzing harness: each service's real app on a real socket (uvicorn in a thread of its own, with its own event
loop, lifespan included), so schemathesis's synchronous calls never share pytest-asyncio's loop.

The test modules build their schemathesis schema from the app's own ``app.openapi()`` at import (no connection
is made at import: composition roots connect in their lifespan), then call the served app from a module-scoped
fixture built on the ``stockade.testing`` real servers (PostgreSQL, NATS).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import requests
import uvicorn

from stockade.testing.ports import free_port


@contextmanager
def _serve(app: Any) -> Iterator[str]:
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, lifespan="on", access_log=False)
    )
    failure: list[BaseException] = []

    def run() -> None:
        try:
            asyncio.run(server.serve())
        except BaseException as exc:
            failure.append(exc)

    thread = threading.Thread(target=run, name=f"fuzz-server-{port}", daemon=True)
    thread.start()
    try:
        for _ in range(1200):
            if server.started or not thread.is_alive():
                break
            threading.Event().wait(0.025)
        if failure:
            raise failure[0]
        assert server.started, "the app did not start within 30 s"
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@pytest.fixture(scope="module")
def serve_app():
    """``with serve_app(app) as base_url``: the app served on 127.0.0.1 until the block ends."""
    return _serve


@pytest.fixture(scope="module")
def http() -> Iterator[requests.Session]:
    """One keep-alive session for every call of a module."""
    with requests.Session() as session:
        yield session


@pytest.fixture(scope="module")
def answers() -> dict[str, list[int]]:
    """Status codes answered per operation label (``GET /prompts``), for the module's closing reachability test."""
    return {}
