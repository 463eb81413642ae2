"""Run an ASGI app with uvicorn and stop it gracefully on SIGTERM/SIGINT (in-flight requests finish)."""

from __future__ import annotations

import uvicorn
from fastapi import FastAPI

from stockade.runtime.settings import ServiceSettings


def serve(app: FastAPI, settings: ServiceSettings) -> None:
    """Blocking: serve until a stop signal; uvicorn drains connections, then the app's lifespan closes NATS/DB.

    With ``http.proxy_headers`` uvicorn trusts X-Forwarded-Proto/-For from ``http.forwarded_allow_ips`` only, so
    the app sees the client's scheme (https: Secure cookies, HSTS) and address (rate limits)."""
    config = uvicorn.Config(
        app,
        host=settings.http.host,
        port=settings.http.port,
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=10,
        proxy_headers=settings.http.proxy_headers,
        forwarded_allow_ips=settings.http.forwarded_allow_ips,
    )
    uvicorn.Server(config).run()
