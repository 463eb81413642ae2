"""Transactional outbox: an event is written in the same transaction as the change it reports and sent to
JetStream after the commit by :class:`OutboxRelay`, with ``Nats-Msg-Id = event_id``.

A service declares its own outbox table by mixing :class:`OutboxColumns` into its declarative base (the table
name, indexes and migrations stay the service's), calls :func:`enqueue` inside its write transaction, and runs one
:class:`OutboxRelay` per process. The relay sends unsent rows oldest first and marks them sent; while NATS or the
database is unreachable the rows wait and it retries every ``interval_s`` (warning once per 30 s). A row sent
twice (a crash between publish and mark, two replicas) is stored once by JetStream thanks to the message id.
Sent rows are deleted after ``retain_sent_s``; unsent rows never are.

The relay gets its NATS connection from an async callable returning the client or None: a service passes its
bus's connection (:func:`given_connection`, or ``ServiceState.current_nats`` when the broker connects in the
background); a relay outside a service can pass a :class:`~stockade.runtime.nats.LazyNatsConnection`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any

from nats.aio.client import Client as NatsClient
from nats.js.client import JetStreamContext
from sqlalchemy import JSON, Integer, String, Text, delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlalchemy.orm import Mapped, mapped_column

from stockade.contracts import EventEnvelope
from stockade.contracts.jetstream import ensure_stream
from stockade.contracts.streams import stream_spec_for
from stockade.runtime import tracing
from stockade.runtime.db_types import UtcDateTime, utcnow
from stockade.runtime.metrics import OUTBOX_FAILURES, OUTBOX_PENDING, OUTBOX_PUBLISHED
from stockade.runtime.settings import OutboxSettings
from stockade.runtime.shutdown import GRACE_S, cancel_within

log = logging.getLogger(__name__)

NatsConnection = Callable[[], Awaitable[NatsClient | None]]
"""Returns the client to publish with (``None`` or a disconnected client: NATS is away, retry later)."""

WARN_EVERY_S = 30.0
PRUNE_EVERY_S = 60.0
PUBLISH_TIMEOUT_S = 2.0
SAMPLE_EVERY_S = 10.0
ENQUEUED = "stockade.outbox.enqueued"
"""Set in ``session.info`` by :func:`enqueue`: the unit of work (:mod:`stockade.runtime.uow`) wakes the relay
after a commit that enqueued an event."""


class OutboxColumns:
    """The columns of an outbox table. Mix into a declarative class that sets ``__tablename__`` (and indexes)."""

    event_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    subject: Mapped[str] = mapped_column(String(200))
    payload: Mapped[str] = mapped_column(Text)
    headers: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    sent_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    attempts: Mapped[int] = mapped_column(Integer, default=0)


def enqueue(session: AsyncSession, table: type[OutboxColumns], event: EventEnvelope) -> None:
    """Add ``event`` to the outbox ``table`` inside the caller's (still open) transaction. Its headers keep the
    current trace context (``traceparent``): the relay publishes it later, so the consumer continues the trace of
    the request that made the change."""
    row = table()
    row.event_id = str(event.event_id)
    row.subject = event.address()  # the subject it is published on (prompt.published.v1.<project>)
    row.payload = event.model_dump_json()
    row.headers = dict(tracing.inject(event.headers()))
    row.created_at = utcnow()
    row.attempts = 0
    session.add(row)
    session.info[ENQUEUED] = True


def given_connection(nc: NatsClient | None) -> NatsConnection:
    """A connection source for a relay that uses a client the service already owns (and drains itself)."""

    async def connection() -> NatsClient | None:
        return nc

    return connection


class OutboxRelay:
    """Sends the rows of one outbox table to JetStream: ``start()`` once, ``wake()`` after each commit, ``stop()``.

    ``sent`` counts the events this relay has published since it was built. Metrics (labelled by table):
    ``stockade_outbox_published_events_total``, ``stockade_outbox_publish_failures_total`` and
    ``stockade_outbox_pending_events`` (unsent rows, counted at most every ``SAMPLE_EVERY_S``).
    """

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        table: type[OutboxColumns],
        connection: NatsConnection,
        settings: OutboxSettings,
        *,
        replicas: int = 1,
    ) -> None:
        """``replicas``: copies of a stream the relay creates (``NatsSettings.stream_replicas``)."""
        self._replicas = replicas
        self._sessions = sessions
        self._table = table
        self._connection = connection
        self._settings = settings
        self._label = str(getattr(table, "__tablename__", table.__name__))
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._streams_ready: set[str] = set()
        self._streams_client: NatsClient | None = None
        self._failing_since: float | None = None
        self._last_warning = -math.inf
        self._last_prune = -math.inf
        self._last_sample = -math.inf
        self._published = OUTBOX_PUBLISHED.labels(self._label)
        self._failures = OUTBOX_FAILURES.labels(self._label)
        self._pending = OUTBOX_PENDING.labels(self._label)
        self.sent = 0

    def start(self) -> None:
        self._stopping = False
        self._task = asyncio.create_task(self._run(), name=f"outbox-relay-{self._label}")

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def wake(self) -> None:
        """Called after a commit: send now rather than at the next interval."""
        self._wake.set()

    async def stop(self, timeout_s: float | None = None) -> None:
        """Let the current round finish, send what is still pending in one more round, then end (bounded).

        The loop is asked to stop rather than cancelled mid-query: a cancellation inside a database call can be
        swallowed by the driver, which would leave the loop running and shutdown waiting forever. Only past
        ``timeout_s`` (default ``settings.stop_timeout_s``) is it cancelled; unsent rows wait for the next start.
        """
        task = self._task
        if task is None or task.done():
            return
        budget = self._settings.stop_timeout_s if timeout_s is None else timeout_s
        self._stopping = True
        self._wake.set()
        try:
            await asyncio.wait_for(asyncio.shield(task), timeout=budget)
        except TimeoutError:
            log.warning(
                "outbox relay (%s): did not stop within %.1f s; unsent events stay for the next start",
                self._label,
                budget,
            )
            # cancelled again and again for a second, then abandoned: never wait on a task that swallows it
            await cancel_within(task, GRACE_S)

    async def _run(self) -> None:
        while True:
            self._wake.clear()
            last = self._stopping  # asked to stop during the previous round: this round sees its last commits
            await self._round()
            if last:
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=self._settings.interval_s)

    async def _round(self) -> None:
        failure: Exception | None = None
        for step in (
            self.flush,
            self._prune_when_due,
            self._sample_when_due,
        ):  # these go on while NATS is away
            try:
                await step()
            except Exception as exc:  # NATS or the database is down: keep the rows, retry later
                failure = failure or exc
        if failure is not None:
            now = time.monotonic()
            if now - self._last_warning >= WARN_EVERY_S:
                log.warning(
                    "outbox relay (%s): events not sent yet, retrying every %.1f s (%s: %s)",
                    self._label,
                    self._settings.interval_s,
                    type(failure).__name__,
                    failure,
                )
                self._last_warning = now
            if self._failing_since is None:
                self._failing_since = now
            return
        if self._failing_since is not None:
            log.info(
                "outbox relay (%s): delivering again after %.0f s",
                self._label,
                time.monotonic() - self._failing_since,
            )
            self._failing_since = None
            self._last_warning = -math.inf

    async def flush(self) -> int:
        """Send every unsent event, oldest first; returns how many were sent. Raises when NATS is away."""
        table = self._table
        sent = 0
        while True:
            async with self._sessions() as session:
                rows = (
                    await session.execute(
                        select(table)
                        .where(table.sent_at.is_(None))
                        .order_by(table.created_at, table.event_id)
                        .limit(self._settings.batch_size)
                    )
                ).scalars()
                pending = [(r.event_id, r.subject, r.payload, dict(r.headers)) for r in rows]
            if not pending:
                self._pending.set(0)  # none unsent at this moment
                return sent
            nc = await self._connection()
            if nc is None or not nc.is_connected:
                raise ConnectionError("NATS is not connected")
            if nc is not self._streams_client:
                self._streams_ready.clear()
                self._streams_client = nc
            js = nc.jetstream()
            for event_id, subject, payload, headers in pending:
                try:
                    await self._ensure_stream(js, subject)
                    await js.publish(subject, payload.encode(), headers=headers, timeout=PUBLISH_TIMEOUT_S)
                except Exception:
                    self._streams_ready.clear()  # the server may have lost its streams (new store)
                    self._failures.inc()
                    await self._count_attempt(event_id)
                    raise
                await self._mark_sent(event_id)
                sent += 1
                self.sent += 1
                self._published.inc()

    async def prune(self) -> int:
        """Delete events sent longer than ``retain_sent_s`` ago; unsent events are never deleted."""
        table = self._table
        cutoff = utcnow() - timedelta(seconds=self._settings.retain_sent_s)
        async with self._sessions() as session:
            result = await session.execute(
                delete(table).where(table.sent_at.is_not(None), table.sent_at <= cutoff)
            )
            await session.commit()
        return int(getattr(result, "rowcount", 0) or 0)

    async def _prune_when_due(self) -> None:
        """Prune at most once a minute (each round when the retention is shorter than that)."""
        now = time.monotonic()
        if now - self._last_prune >= min(PRUNE_EVERY_S, self._settings.retain_sent_s):
            await self.prune()
            self._last_prune = now

    async def pending(self) -> int:
        """Rows committed and not sent yet (also set as ``stockade_outbox_pending_events``)."""
        table = self._table
        async with self._sessions() as session:
            count = await session.scalar(
                select(func.count()).select_from(table).where(table.sent_at.is_(None))
            )
        self._pending.set(int(count or 0))
        return int(count or 0)

    async def _sample_when_due(self) -> None:
        now = time.monotonic()
        if now - self._last_sample >= SAMPLE_EVERY_S:
            self._last_sample = now
            await self.pending()

    async def _ensure_stream(self, js: JetStreamContext, subject: str) -> None:
        spec = stream_spec_for(subject)
        if spec.name in self._streams_ready:
            return
        await ensure_stream(js, spec, replicas=self._replicas)  # with byte and age limits
        self._streams_ready.add(spec.name)

    async def _mark_sent(self, event_id: str) -> None:
        await self._update(event_id, {"sent_at": utcnow()})

    async def _count_attempt(self, event_id: str) -> None:
        await self._update(event_id, {"attempts": self._table.attempts + 1})

    async def _update(self, event_id: str, values: dict[str, Any]) -> None:
        table = self._table
        async with self._sessions() as session:
            await session.execute(update(table).where(table.event_id == event_id).values(**values))
            await session.commit()
