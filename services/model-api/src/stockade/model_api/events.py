"""Publishing model-api's events to JetStream after the commit, with ``Nats-Msg-Id = event_id``.

A publish that fails is retried a few times (JetStream stores a retried event once thanks to the message id);
if NATS stays unreachable the event is logged as lost: the database change itself is already committed.
"""

from __future__ import annotations

import asyncio
import logging

from nats.aio.client import Client as NatsClient
from nats.js.errors import NotFoundError as StreamNotFound

from stockade.contracts import EventEnvelope
from stockade.contracts.subjects import STREAMS, stream_for

log = logging.getLogger(__name__)


class EventPublisher:
    def __init__(self, nc: NatsClient | None, *, attempts: int = 3, timeout_s: float = 2.0) -> None:
        self._nc = nc
        self._attempts = attempts
        self._timeout_s = timeout_s
        self._streams_ready: set[str] = set()
        self.published: int = 0
        self.lost: int = 0

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

    async def publish(self, event: EventEnvelope) -> bool:
        """True once JetStream acknowledged the event."""
        if self._nc is None:
            self.lost += 1
            log.warning("event %s %s not published: no NATS connection", event.subject, event.event_id)
            return False
        for attempt in range(1, self._attempts + 1):
            try:
                await self._ensure_stream(self._nc, event.subject)
                await self._nc.jetstream().publish(
                    event.subject, event.to_bytes(), headers=event.headers(), timeout=self._timeout_s
                )
                self.published += 1
                return True
            except Exception as exc:  # NATS down or slow: retry, then give up without failing the request
                log.warning(
                    "publishing %s %s failed (attempt %d): %s: %s",
                    event.subject,
                    event.event_id,
                    attempt,
                    type(exc).__name__,
                    exc,
                )
                await asyncio.sleep(0.1 * attempt)
        self.lost += 1
        return False
