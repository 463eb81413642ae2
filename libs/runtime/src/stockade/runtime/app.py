"""The shared shape of an HTTP service: lifespan that owns the DB engine and the NATS connection.

A service's ``create_app(settings)`` calls :func:`create_service_app` and then mounts its routers. Nothing connects
before the lifespan starts; on shutdown the NATS connection drains and the engine is disposed.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI
from nats.aio.client import Client as NatsClient
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from stockade.runtime.db import create_engine, session_factory
from stockade.runtime.errors import install_error_handlers
from stockade.runtime.health import ReadinessCheck, database_check, health_router, nats_check
from stockade.runtime.nats import connect_nats, drain, serve_health
from stockade.runtime.observability import install_observability
from stockade.runtime.security_headers import install_security_headers
from stockade.runtime.settings import ServiceSettings

log = logging.getLogger(__name__)

Hook = Callable[["ServiceState"], Awaitable[None]]


@dataclass
class ServiceState:
    """What the lifespan built; available as ``app.state.service`` (and through each service's deps.py)."""

    settings: ServiceSettings
    engine: AsyncEngine | None = None
    sessions: async_sessionmaker[AsyncSession] | None = None
    nats: NatsClient | None = None
    extras: dict[str, Any] = field(default_factory=dict)

    def readiness(self) -> dict[str, ReadinessCheck]:
        checks: dict[str, ReadinessCheck] = {}
        if self.engine is not None:
            checks["database"] = database_check(self.engine)
        if self.nats is not None:
            checks["nats"] = nats_check(self.nats)
        return checks


def create_service_app(
    settings: ServiceSettings,
    *,
    title: str,
    health_subject: str | None,
    uses_db: bool = True,
    uses_nats: bool = True,
    on_startup: Hook | None = None,
    on_shutdown: Hook | None = None,
    security_headers: Mapping[str, str | None] | None = None,
) -> FastAPI:
    """``security_headers``: overrides of :data:`stockade.runtime.security_headers.DEFAULT_HEADERS` (a service
    with browser pages passes its own content security policy)."""
    state = ServiceState(settings=settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            if uses_db:
                state.engine = create_engine(settings.db)
                state.sessions = session_factory(state.engine)
                stack.push_async_callback(state.engine.dispose)
            if uses_nats:
                state.nats = await connect_nats(settings.nats, name=settings.service_name)
                stack.push_async_callback(drain, state.nats, settings.nats.drain_timeout_s)
                if health_subject:
                    await serve_health(state.nats, health_subject, settings.service_name)
            if on_startup is not None:
                await on_startup(state)
            if on_shutdown is not None:
                stack.push_async_callback(on_shutdown, state)
            log.info("%s ready", settings.service_name)
            yield
            log.info("%s stopping", settings.service_name)

    # FastAPI's own OpenTelemetry spans (one per request plus one per dependency, endpoint and serialisation) turn
    # on as soon as a tracer provider is installed and tripled the cost of a trivial request here (44 -> 145 us):
    # off; the observability middleware makes the request's one server span.
    app = FastAPI(title=title, lifespan=lifespan, telemetry={"tracing": False, "operation_spans": False})
    app.state.service = state
    install_error_handlers(app)
    install_security_headers(app, security_headers, hsts_max_age_s=settings.http.hsts_max_age_s)
    install_observability(app, settings.service_name, access_log=settings.log.access_log)
    app.include_router(health_router(settings.service_name, state.readiness))
    return app
