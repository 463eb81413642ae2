"""Composition root of prompt-api: ``create_app(settings)``; the lifespan builds the engine and the outbox relay.

Nothing connects at import time. NATS is optional for serving: publishes commit to the database and the outbox
relay delivers their events once NATS answers.
"""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from stockade.prompt_api import migrate
from stockade.prompt_api.errors import BodyTooLarge, Forbidden, InvalidContent, InvalidPath, NotFound
from stockade.prompt_api.outbox import OutboxRelay
from stockade.prompt_api.read_path import ActivePromptReader, PostgresReader, SqlAlchemyReader
from stockade.prompt_api.routes import prompts, reviews, skills
from stockade.prompt_api.settings import PromptApiSettings
from stockade.runtime import (
    configure_logging,
    create_engine,
    database_check,
    error_response,
    health_router,
    install_error_handlers,
    install_security_headers,
    normalise_url,
    session_factory,
)
from stockade.runtime.db import is_sqlite
from stockade.runtime.observability import install_observability

_STATUS: dict[type[Exception], tuple[int, str]] = {
    Forbidden: (403, "forbidden"),
    NotFound: (404, "not_found"),
    InvalidContent: (422, "invalid_request"),
    InvalidPath: (400, "invalid_path"),
    BodyTooLarge: (413, "payload_too_large"),
}


def create_app(settings: PromptApiSettings | None = None, *, configure_logs: bool = True) -> FastAPI:
    settings = settings or PromptApiSettings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if configure_logs:
            configure_logging(settings.service_name, settings.log.level, settings.log.json_format)
        if settings.migrate_on_startup:
            await migrate.upgrade_async(settings.db.url)
        engine = create_engine(settings.db)
        sessions = session_factory(engine)
        relay = OutboxRelay(sessions, settings.nats, settings.outbox, settings.service_name)
        app.state.engine, app.state.sessions, app.state.relay = engine, sessions, relay
        app.state.reader = reader = await _active_prompt_reader(settings)
        if settings.outbox.enabled:
            relay.start()
        if settings.gc_freeze:
            _freeze_startup_heap()
        try:
            yield
        finally:
            await relay.stop()
            await reader.close()
            await engine.dispose()

    # FastAPI's own per-request and per-operation spans are off (stockade.runtime.app says why): the observability
    # middleware makes the request's one server span.
    app = FastAPI(
        title="Stockade prompt-api",
        version="1",
        lifespan=lifespan,
        telemetry={"tracing": False, "operation_spans": False},
    )
    app.state.settings = settings
    install_error_handlers(app)
    install_security_headers(app, hsts_max_age_s=settings.http.hsts_max_age_s)
    install_observability(app, settings.service_name, access_log=settings.log.access_log)
    for exc_type, (status, code) in _STATUS.items():
        app.add_exception_handler(exc_type, _handler(status, code))
    app.include_router(
        health_router(settings.service_name, lambda: {"database": database_check(app.state.engine)})
    )
    app.include_router(prompts.router)
    app.include_router(skills.router)
    app.include_router(reviews.router)
    return app


async def _active_prompt_reader(settings: PromptApiSettings) -> ActivePromptReader:
    """The hot read path has its own pool: one statement needs no transaction (autocommit saves the BEGIN and
    ROLLBACK round trips) and no pre-ping round trip (a dropped connection is retried once instead). On
    PostgreSQL it is a plain asyncpg pool (no ORM on the hot path); on SQLite an autocommit SQLAlchemy engine."""
    url = normalise_url(settings.db.url)
    if not is_sqlite(url):
        return await PostgresReader.connect(
            url, settings.read_path.statements_in_flight, settings.read_path.max_batch
        )
    engine = create_engine(settings.db.model_copy(update={"pool_pre_ping": False}))
    return SqlAlchemyReader(engine.execution_options(isolation_level="AUTOCOMMIT"))


def _freeze_startup_heap() -> None:
    """The read tail (issue 18): CPython's full (generation 2) collections walked the whole startup heap
    (~130k objects: FastAPI, pydantic, SQLAlchemy, asyncpg) and stopped the event loop for 90-150 ms each, about
    every 2 s under load; every request in flight waited. Frozen objects are never scanned again (they stay
    alive: garbage among them is not collected, which for startup objects is what happens anyway)."""
    gc.collect()
    gc.freeze()


def _handler(status: int, code: str):  # type: ignore[no-untyped-def]
    async def handle(_: Request, exc: Exception) -> JSONResponse:
        return error_response(status, code, str(exc))

    return handle
