"""model-api's transactional outbox (the relay itself is ``stockade.runtime.outbox``).

An event is written to ``model_api_outbox`` in the same transaction as the change it reports (:func:`enqueue`)
and sent to JetStream after the commit by :class:`OutboxRelay` over the service's own NATS connection.
"""

from __future__ import annotations

from nats.aio.client import Client as NatsClient
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from stockade.contracts import EventEnvelope
from stockade.model_api.tables import OutboxEvent
from stockade.runtime import outbox
from stockade.runtime.settings import OutboxSettings


def enqueue(session: AsyncSession, event: EventEnvelope) -> None:
    """Add ``event`` to the outbox inside the caller's (still open) transaction."""
    outbox.enqueue(session, OutboxEvent, event)


class OutboxRelay(outbox.OutboxRelay):
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        nc: NatsClient | None,
        settings: OutboxSettings,
        replicas: int = 1,
    ) -> None:
        super().__init__(sessions, OutboxEvent, outbox.given_connection(nc), settings, replicas=replicas)
