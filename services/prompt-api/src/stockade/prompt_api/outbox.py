"""Transactional outbox: events are written in the publish transaction and sent to JetStream after the commit.

``enqueue`` adds the event row inside the caller's transaction. ``OutboxRelay`` (one task per process) sends
unsent rows in order with ``Nats-Msg-Id = event_id`` and marks them sent; while NATS is unreachable it retries
every ``interval_s``. A row sent twice (crash between publish and mark, two replicas) is stored once by JetStream.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from datetime import timedelta
from typing import Any

from nats.aio.client import Client as NatsClient
from nats.js.errors import NotFoundError as StreamNotFound
from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from stockade.contracts import EventEnvelope
from stockade.contracts.subjects import PROMPT_HEALTH, STREAMS, stream_for
from stockade.identity.db_types import utcnow
from stockade.prompt_api.settings import OutboxSettings
from stockade.prompt_api.tables import OutboxEvent
from stockade.runtime import NatsSettings, connect_nats, drain, serve_health

log = logging.getLogger(__name__)


def enqueue(session: AsyncSession, event: EventEnvelope) -> None:
    """Add ``event`` to the outbox in the caller's (still open) transaction."""
    session.add(
        OutboxEvent(
            event_id=str(event.event_id),
            subject=event.subject,
            payload=event.model_dump_json(),
            headers=event.headers(),
            created_at=utcnow(),
            attempts=0,
        )
    )


class OutboxRelay:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        nats: NatsSettings,
        settings: OutboxSettings,
        service: str = "prompt-api",
    ) -> None:
        self._sessions = sessions
        self._nats_settings = nats.model_copy(update={"startup_wait_s": 0.0})
        self._settings = settings
        self._service = service
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._streams_ready: set[str] = set()
        self.nc: NatsClient | None = None
        self._failing_since: float | None = None  # warn once per 30 s while failing, not every round
        self._last_warning = 0.0

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="outbox-relay")

    def wake(self) -> None:
        """Called after a commit: send now instead of at the next interval."""
        self._wake.set()

    async def stop(self) -> None:
        if self._task is None:
            return
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.flush(), timeout=5.0)  # what was committed just before shutdown
        if self.nc is not None:
            await drain(self.nc, self._nats_settings.drain_timeout_s)

    async def _run(self) -> None:
        while True:
            try:
                await self.flush()
                await self.prune()
                if self._failing_since is not None:
                    log.info(
                        "outbox relay: delivering again after %.0f s", time.monotonic() - self._failing_since
                    )
                    self._failing_since = None
            except Exception as exc:  # NATS or the database is down: keep the rows, retry later
                now = time.monotonic()
                if self._failing_since is None or now - self._last_warning >= 30.0:
                    log.warning(
                        "outbox relay: events not sent yet, retrying (%s: %s)", type(exc).__name__, exc
                    )
                    self._last_warning = now
                self._failing_since = self._failing_since or now
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=self._settings.interval_s)
            self._wake.clear()

    async def _connection(self) -> NatsClient:
        if self.nc is None or self.nc.is_closed:
            self.nc = await connect_nats(self._nats_settings, name=self._service)
            self._streams_ready.clear()
            await serve_health(self.nc, PROMPT_HEALTH, self._service)
        if not self.nc.is_connected:
            raise ConnectionError("NATS is reconnecting")
        return self.nc

    async def _ensure_stream(self, nc: NatsClient, subject: str) -> None:
        name = stream_for(subject)
        if name in self._streams_ready:
            return
        js = nc.jetstream()
        try:
            await js.stream_info(name)
        except StreamNotFound:
            await js.add_stream(name=name, subjects=list(STREAMS[name]))
        self._streams_ready.add(name)

    async def flush(self) -> int:
        """Send every unsent event, oldest first; returns how many were sent."""
        sent = 0
        while True:
            async with self._sessions() as session:
                rows = (
                    (
                        await session.execute(
                            select(OutboxEvent)
                            .where(OutboxEvent.sent_at.is_(None))
                            .order_by(OutboxEvent.created_at, OutboxEvent.event_id)
                            .limit(self._settings.batch_size)
                        )
                    )
                    .scalars()
                    .all()
                )
                pending = [(r.event_id, r.subject, r.payload, dict(r.headers)) for r in rows]
            if not pending:
                return sent
            nc = await self._connection()
            js = nc.jetstream()
            for event_id, subject, payload, headers in pending:
                await self._ensure_stream(nc, subject)
                try:
                    await js.publish(subject, payload.encode(), headers=headers, timeout=2.0)
                except Exception:
                    await self._count_attempt(event_id)
                    raise
                await self._mark_sent(event_id)
                sent += 1

    async def prune(self) -> int:
        """Delete events sent longer than ``retain_sent_s`` ago; unsent events are never deleted."""
        cutoff = utcnow() - timedelta(seconds=self._settings.retain_sent_s)
        async with self._sessions() as session:
            result = await session.execute(
                delete(OutboxEvent).where(OutboxEvent.sent_at.is_not(None), OutboxEvent.sent_at <= cutoff)
            )
            await session.commit()
        return int(getattr(result, "rowcount", 0) or 0)

    async def _mark_sent(self, event_id: str) -> None:
        async with self._sessions() as session:
            await session.execute(
                update(OutboxEvent).where(OutboxEvent.event_id == event_id).values(sent_at=utcnow())
            )
            await session.commit()

    async def _count_attempt(self, event_id: str) -> None:
        async with self._sessions() as session:
            values: dict[str, Any] = {"attempts": OutboxEvent.attempts + 1}
            await session.execute(
                update(OutboxEvent).where(OutboxEvent.event_id == event_id).values(**values)
            )
            await session.commit()
