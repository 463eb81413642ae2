"""Composition root of prompt-api: ``create_app(settings)`` on ``stockade.runtime.app.create_service_app``.

Nothing connects at import time. The startup hook migrates, opens the hot read path's reader and starts the outbox
relay (:class:`stockade.prompt_api.deps.PromptApiState`). NATS is optional for serving (``wait_for_nats=False``):
the bus connects in the background, readiness does not depend on it, publishes commit to the database and the
relay delivers their events once NATS answers.
"""

from __future__ import annotations

import gc
from collections.abc import Awaitable, Callable

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from stockade.contracts.subjects import PROMPT_HEALTH
from stockade.prompt_api import migrate
from stockade.prompt_api.deps import PromptApiState
from stockade.prompt_api.errors import (
    BodyTooLarge,
    Forbidden,
    InvalidContent,
    InvalidPath,
    InvalidPolicy,
    NotFound,
)
from stockade.prompt_api.read_path import ActivePromptReader, PostgresReader, SqlAlchemyReader
from stockade.prompt_api.routes import policies, prompts, reviews, skills
from stockade.prompt_api.settings import PromptApiSettings
from stockade.prompt_api.tables import OutboxEvent
from stockade.runtime import outbox
from stockade.runtime.app import ServiceState, create_service_app
from stockade.runtime.db import create_engine, is_sqlite, normalise_url
from stockade.runtime.errors import error_response

_STATUS: dict[type[Exception], tuple[int, str]] = {
    Forbidden: (403, "forbidden"),
    NotFound: (404, "not_found"),
    InvalidContent: (422, "invalid_request"),
    InvalidPath: (400, "invalid_path"),
    BodyTooLarge: (413, "payload_too_large"),
}


def create_app(settings: PromptApiSettings | None = None) -> FastAPI:
    """The app; it configures no logging (``python -m stockade.prompt_api`` does, once:
    :func:`stockade.runtime.entrypoint.run_service`)."""
    settings = settings or PromptApiSettings()

    async def on_startup(state: ServiceState[PromptApiState]) -> PromptApiState:
        if settings.migrate_on_startup:
            await migrate.upgrade_async(settings.db.url)
        assert state.sessions is not None
        reader = await _active_prompt_reader(settings)
        # the bus's connection, None until the broker has connected: events wait in the table meanwhile
        relay = outbox.OutboxRelay(
            state.sessions,
            OutboxEvent,
            state.current_nats,
            settings.outbox,
            replicas=settings.nats.stream_replicas,
        )
        if settings.outbox.enabled:
            relay.start()
        if settings.gc_freeze:
            _freeze_startup_heap()
        return PromptApiState(reader=reader, relay=relay)

    async def on_shutdown(own: PromptApiState) -> None:
        # before NATS drains and the engine is disposed (create_service_app's order): the relay's last round
        # still has both
        await own.relay.stop()
        await own.reader.close()

    app = create_service_app(
        settings,
        title="Stockade prompt-api",
        health_subject=PROMPT_HEALTH,
        wait_for_nats=False,
        on_startup=on_startup,
        on_shutdown=on_shutdown,
    )
    app.version = "1"
    for exc_type, (status, code) in _STATUS.items():
        app.add_exception_handler(exc_type, _handler(status, code))
    app.add_exception_handler(InvalidPolicy, _invalid_policy)
    app.include_router(prompts.router)
    app.include_router(skills.router)
    app.include_router(policies.router)
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
    """The read tail: CPython's full (generation 2) collections walked the whole startup heap
    (~130k objects: FastAPI, pydantic, SQLAlchemy, asyncpg) and stopped the event loop for 90-150 ms each, about
    every 2 s under load; every request in flight waited. Frozen objects are never scanned again (they stay
    alive: garbage among them is not collected, which for startup objects is what happens anyway)."""
    gc.collect()
    gc.freeze()


async def _invalid_policy(_: Request, exc: Exception) -> JSONResponse:
    """422 naming the key path of the policy's first problem (``error.details.path``)."""
    assert isinstance(exc, InvalidPolicy)
    return error_response(422, exc.code, str(exc), path=exc.path)


def _handler(status: int, code: str) -> Callable[[Request, Exception], Awaitable[JSONResponse]]:
    async def handle(_: Request, exc: Exception) -> JSONResponse:
        return error_response(status, code, str(exc))

    return handle
