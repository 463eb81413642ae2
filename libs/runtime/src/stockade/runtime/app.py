"""The shared shape of an HTTP service: lifespan that owns the DB engine and the bus (NATS connection).

A service's ``create_app(settings)`` calls :func:`create_service_app` and then mounts its routers. Nothing connects
before the lifespan starts; on shutdown the bus handlers finish, the NATS connection drains and the engine is
disposed.

The bus is one FastStream broker (:mod:`stockade.runtime.bus`): the service declares its subscribers on
``state.broker`` in ``on_startup`` and the lifespan starts them when the hook returns; ``state.nats`` is the
broker's own nats-py connection for what FastStream does not cover (JetStream pull consumers, the outbox relay).
A service that must serve without NATS (prompt-api) passes ``wait_for_nats=False``: the broker then connects in
the background, retrying for as long as the process runs, and ``state.nats`` stays None until it has.

Each service declares its own typed state (a dataclass of its adapters, or the one object it needs): its
``on_startup`` hook builds it from the shared :class:`ServiceState` and returns it, its ``on_shutdown`` hook gets it
back, and its routes read it with :func:`service_of` (checked against the class asked for, no string keys).
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from fastapi import FastAPI, Request
from faststream.nats import NatsBroker
from nats.aio.client import Client as NatsClient
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from stockade.contracts.nats_sync import sync_with_server
from stockade.runtime.bus import connect_broker, declare_health, make_broker, stop_broker
from stockade.runtime.db import create_engine, session_factory
from stockade.runtime.errors import install_error_handlers
from stockade.runtime.health import ReadinessCheck, database_check, health_router, nats_check
from stockade.runtime.observability import install_observability
from stockade.runtime.security_headers import install_security_headers
from stockade.runtime.settings import ServiceSettings
from stockade.runtime.shutdown import GRACE_S, ShutdownDeadline, cancel_within

log = logging.getLogger(__name__)

S = TypeVar("S")
T = TypeVar("T")


@dataclass
class ServiceState(Generic[S]):
    """What the lifespan built; available as ``app.state.service`` (and through each service's deps.py).

    ``own`` is the service's typed state, returned by its ``on_startup`` hook (None before startup and for a
    service without one)."""

    settings: ServiceSettings
    engine: AsyncEngine | None = None
    sessions: async_sessionmaker[AsyncSession] | None = None
    broker: NatsBroker | None = None
    nats: NatsClient | None = None
    own: S | None = field(default=None)
    nats_required: bool = True

    def readiness(self) -> dict[str, ReadinessCheck]:
        checks: dict[str, ReadinessCheck] = {}
        if self.engine is not None:
            checks["database"] = database_check(self.engine)
        if self.nats is not None and self.nats_required:
            checks["nats"] = nats_check(self.nats)
        return checks

    async def current_nats(self) -> NatsClient | None:
        """The broker's connection, or None before it connected (a connection source for an outbox relay)."""
        return self.nats


def create_service_app(
    settings: ServiceSettings,
    *,
    title: str,
    health_subject: str | None,
    uses_db: bool = True,
    uses_nats: bool = True,
    wait_for_nats: bool = True,
    on_startup: Callable[[ServiceState[S]], Awaitable[S]] | None = None,
    on_shutdown: Callable[[S], Awaitable[None]] | None = None,
    security_headers: Mapping[str, str | None] | None = None,
    docs: bool = True,
) -> FastAPI:
    """``security_headers``: overrides of :data:`stockade.runtime.security_headers.DEFAULT_HEADERS` (a service
    with browser pages passes its own content security policy). ``docs``: whether ``/docs`` and ``/redoc`` are
    served unless ``http.docs`` says otherwise (their script comes from a CDN: a service with pages of its own
    keeps them off, finding L8).

    ``on_startup`` runs after the engine and NATS exist, may declare subscribers on ``state.broker``, and
    returns the service's own state (``state.own``); ``on_shutdown`` gets that state back and runs before the
    bus stops and the engine is disposed (only if ``on_startup`` returned).

    ``wait_for_nats=False``: startup does not wait for NATS (the broker connects in the background and starts
    the subscribers then), and readiness does not depend on it."""
    state: ServiceState[S] = ServiceState(settings=settings, nats_required=wait_for_nats)

    async def connect_later(broker: NatsBroker, stopping: asyncio.Event) -> None:
        connection = await connect_broker(broker, settings.nats, wait_s=math.inf, until=stopping)
        try:
            await _start_subscribers(broker)
        except (
            Exception
        ) as exc:  # the connection dropped again: nats-py re-sends the subscriptions on reconnect
            log.warning(
                "%s: NATS went away while the bus started (%s: %s)",
                settings.service_name,
                type(exc).__name__,
                exc,
            )
        else:
            log.info("%s connected to NATS", settings.service_name)
        finally:
            # Published only now, so whoever sees the connection (the outbox relay, a readiness check) also
            # sees a service whose subscribers answer.
            state.nats = connection

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # Every stop step runs within what is left of one budget (stockade.runtime.shutdown): a step that would
        # wait forever is cancelled, then abandoned and named in the log, and the next one still runs.
        stopping = ShutdownDeadline(settings.shutdown_timeout_s, service=settings.service_name)
        async with AsyncExitStack() as stack:
            if uses_db:
                state.engine = create_engine(settings.db)
                state.sessions = session_factory(state.engine)
                stack.push_async_callback(stopping.step, "database engine", state.engine.dispose)
            broker = None
            if uses_nats:
                broker = state.broker = make_broker(settings.nats, name=settings.service_name)
                stack.push_async_callback(
                    stopping.step, "NATS bus", stop_broker, broker, settings.nats.drain_timeout_s
                )
                if health_subject:
                    declare_health(broker, health_subject, settings.service_name)
                if wait_for_nats:
                    state.nats = await connect_broker(broker, settings.nats)
            if on_startup is not None:
                own = await on_startup(state)
                state.own = own
                if on_shutdown is not None:
                    stack.push_async_callback(stopping.step, "service shutdown hook", on_shutdown, own)
            if broker is not None:
                if wait_for_nats:
                    await _start_subscribers(broker)
                else:
                    given_up = asyncio.Event()
                    connecting = asyncio.create_task(connect_later(broker, given_up), name="nats-connect")
                    stack.push_async_callback(
                        stopping.step, "background NATS connect", _stop_connecting, connecting, given_up
                    )
            log.info("%s ready", settings.service_name)
            yield
            log.info("%s stopping", settings.service_name)
        if stopping.abandoned:
            log.error("%s stopped, abandoning: %s", settings.service_name, ", ".join(stopping.abandoned))
        else:
            log.info("%s stopped", settings.service_name)

    # FastAPI's own OpenTelemetry spans (one per request plus one per dependency, endpoint and serialisation) turn
    # on as soon as a tracer provider is installed and tripled the cost of a trivial request here (44 -> 145 us):
    # off; the observability middleware makes the request's one server span.
    pages = docs if settings.http.docs is None else settings.http.docs
    app = FastAPI(
        title=title,
        lifespan=lifespan,
        telemetry={"tracing": False, "operation_spans": False},
        docs_url="/docs" if pages else None,
        redoc_url="/redoc" if pages else None,
    )
    app.state.service = state
    install_error_handlers(app)
    install_security_headers(app, security_headers, hsts_max_age_s=settings.http.hsts_max_age_s)
    install_observability(app, settings.service_name, access_log=settings.log.access_log)
    app.include_router(health_router(settings.service_name, state.readiness))
    return app


async def _start_subscribers(broker: NatsBroker) -> None:
    """Start the subscribers declared so far; the sync returns once the server has every subscription, so the
    service answers from the moment it says it is ready."""
    await broker.start()
    await sync_with_server(broker.connection, 5)


async def _stop_connecting(task: asyncio.Task[None], given_up: asyncio.Event) -> None:
    """End the background connect: the retry loop sees ``given_up`` at its next attempt, and the task is cancelled
    (again and again: nats-py can swallow one cancellation) for at most a second."""
    given_up.set()
    await cancel_within(task, GRACE_S)


def service_state(request: Request) -> ServiceState[Any]:
    """The shared state of the app serving ``request``."""
    state = request.app.state.service
    if not isinstance(state, ServiceState):
        raise RuntimeError("this app was not made by create_service_app")
    return state


def service_of(request: Request, kind: type[T]) -> T:
    """The service's own state (what its ``on_startup`` returned), checked to be a ``kind``."""
    own = service_state(request).own
    if not isinstance(own, kind):
        raise RuntimeError(
            f"the service state is {type(own).__name__}, not {kind.__name__} (not started yet?)"
        )
    return own
