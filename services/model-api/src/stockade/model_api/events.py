"""Transactional outbox: an event is written in the same transaction as the change it reports and sent to
JetStream after the commit by :class:`OutboxRelay`, with ``Nats-Msg-Id = event_id``.

While NATS is unreachable the rows wait and the relay retries every ``interval_s``; a row sent twice (a crash
between publish and mark, two replicas) is stored once by JetStream thanks to the message id.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from nats.aio.client import Client as NatsClient
from nats.js.errors import NotFoundError as StreamNotFound
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from stockade.contracts import EventEnvelope
from stockade.contracts.subjects import STREAMS, stream_for
from stockade.identity.db_types import utcnow
from stockade.model_api.settings import OutboxSettings
from stockade.model_api.tables import OutboxEvent

log = logging.getLogger(__name__)


def enqueue(session: AsyncSession, event: EventEnvelope) -> None:
    """Add ``event`` to the outbox inside the caller's (still open) transaction."""
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
        self, sessions: async_sessionmaker[AsyncSession], nc: NatsClient | None, settings: OutboxSettings
    ) -> None:
        self._sessions = sessions
        self._nc = nc
        self._settings = settings
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._streams_ready: set[str] = set()
        self._stopping = False
        self.sent = 0

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="model-api-outbox")

    def wake(self) -> None:
        """Called after a commit: send now rather than at the next interval."""
        self._wake.set()

    async def stop(self, timeout_s: float = 10.0) -> None:
        """Let the current round finish, send what is still pending, then end the loop (bounded).

        The loop is asked to stop rather than cancelled mid-query: a cancellation inside a database call can
        be swallowed by the driver, which would leave the loop running and shutdown waiting forever.
        """
        if self._task is None:
            return
        self._stopping = True
        self._wake.set()
        try:
            await asyncio.wait_for(asyncio.shield(self._task), timeout=timeout_s)
        except TimeoutError:
            log.warning(
                "outbox: relay did not stop within %.0f s; unsent events stay for the next start", timeout_s
            )
            self._task.cancel()

    async def _run(self) -> None:
        while True:
            try:
                await self.flush()
            except Exception as exc:  # NATS or the database is down: keep the rows, retry later
                log.warning("outbox: events not sent yet (%s: %s)", type(exc).__name__, exc)
            if self._stopping:
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=self._settings.interval_s)
            self._wake.clear()

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
                    await session.execute(
                        select(OutboxEvent)
                        .where(OutboxEvent.sent_at.is_(None))
                        .order_by(OutboxEvent.created_at, OutboxEvent.event_id)
                        .limit(self._settings.batch_size)
                    )
                ).scalars()
                pending = [(r.event_id, r.subject, r.payload, dict(r.headers)) for r in rows]
            if not pending:
                return sent
            nc = self._nc
            if nc is None or not nc.is_connected:
                raise ConnectionError("NATS is not connected")
            for event_id, subject, payload, headers in pending:
                try:
                    await self._ensure_stream(nc, subject)
                    await nc.jetstream().publish(subject, payload.encode(), headers=headers, timeout=2.0)
                except Exception:
                    await self._mark(event_id, sent=False)
                    raise
                await self._mark(event_id, sent=True)
                sent += 1
                self.sent += 1

    async def _mark(self, event_id: str, *, sent: bool) -> None:
        async with self._sessions() as session:
            values = {"sent_at": utcnow()} if sent else {"attempts": OutboxEvent.attempts + 1}
            await session.execute(
                update(OutboxEvent).where(OutboxEvent.event_id == event_id).values(**values)
            )
            await session.commit()
