"""Run an ASGI app with uvicorn and stop it gracefully on SIGTERM/SIGINT (in-flight requests finish)."""

from __future__ import annotations

import uvicorn
from fastapi import FastAPI

from stockade.runtime.settings import ServiceSettings


def serve(app: FastAPI, settings: ServiceSettings) -> None:
    """Blocking: serve until a stop signal; uvicorn drains connections, then the app's lifespan closes NATS/DB."""
    config = uvicorn.Config(
        app,
        host=settings.http.host,
        port=settings.http.port,
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=10,
        proxy_headers=False,
    )
    uvicorn.Server(config).run()
