"""Serve an ASGI app under uvicorn on a free loopback port, inside the test's event loop; list an app's routes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from stockade.testing.ports import free_port

__all__ = ["routes_of", "serving"]


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


def routes_of(app: Any) -> set[tuple[str, str]]:
    """Every ``(method, path)`` a FastAPI app answers, from its own router: included routers walked, a mount (static
    files) as ``GET``, ``HEAD`` left out. The tenancy matrices compare it with their rules, so a new route without
    a rule fails."""
    found: set[tuple[str, str]] = set()

    def walk(routes: list[Any]) -> None:
        for route in routes:
            if hasattr(route, "original_router"):
                walk(route.original_router.routes)
            elif hasattr(route, "app") and not hasattr(route, "methods"):  # a mount
                found.add(("GET", route.path))
            else:
                found.update((m, route.path) for m in route.methods or () if m != "HEAD")

    walk(app.routes)
    return found
