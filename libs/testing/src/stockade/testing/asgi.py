"""Serve an ASGI app under uvicorn on a free loopback port, inside the test's event loop."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from stockade.testing.ports import free_port

__all__ = ["serving"]


@asynccontextmanager
async def serving(app: Any, *, startup_timeout_s: float = 30.0) -> AsyncIterator[str]:
    """Yield the base URL (``http://127.0.0.1:<port>``) while the app serves over a real socket.

    The app's lifespan runs (so its real dependencies are connected) and shuts down gracefully on exit.
    """
    import uvicorn

    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, access_log=False, lifespan="on")
    )
    task = asyncio.create_task(server.serve())
    loop = asyncio.get_running_loop()
    deadline = loop.time() + startup_timeout_s
    while not server.started:
        if task.done():
            task.result()  # raises the startup error
            raise RuntimeError("uvicorn stopped before it started")
        if loop.time() > deadline:
            server.should_exit = True
            raise TimeoutError(f"app did not start within {startup_timeout_s}s")
        await asyncio.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, timeout=30)
