"""prompt-api's transactional outbox (the relay itself is ``stockade.runtime.outbox``).

Publish events are written to the ``outbox`` table in the publish transaction (:func:`enqueue`) and sent to
JetStream after the commit by :class:`OutboxRelay`, which owns its NATS connection: it is opened when there is
something to send (NATS is optional for serving), and it also answers ``prompt.cmd.health.v1``.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from stockade.contracts import EventEnvelope
from stockade.contracts.subjects import PROMPT_HEALTH
from stockade.prompt_api.tables import OutboxEvent
from stockade.runtime import outbox
from stockade.runtime.nats import LazyNatsConnection
from stockade.runtime.settings import NatsSettings, OutboxSettings


def enqueue(session: AsyncSession, event: EventEnvelope) -> None:
    """Add ``event`` to the outbox in the caller's (still open) transaction."""
    outbox.enqueue(session, OutboxEvent, event)


class OutboxRelay(outbox.OutboxRelay):
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        nats: NatsSettings,
        settings: OutboxSettings,
        service: str = "prompt-api",
    ) -> None:
        self.connection = LazyNatsConnection(nats, name=service, health_subject=PROMPT_HEALTH)
        super().__init__(sessions, OutboxEvent, self.connection, settings, replicas=nats.stream_replicas)

    async def stop(self, timeout_s: float | None = None) -> None:
        await super().stop(timeout_s)
        await self.connection.close()
