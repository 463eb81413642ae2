"""The submission hot path: a raw nats-py queue subscription that handles messages concurrently, bounded.

Why not a FastStream subscriber: FastStream's per-message machinery (decoder, middlewares, context, its
worker pool) capped even a do-nothing forwarder well below the 5,000 verified msg/s the service must reach
(figures: libs/guardrails/docs/measurements.md, "Agent trust benchmark"). The service is still a FastStream
app (connection, lifespan, health and reload subscribers, drain on stop); only ``trust.submit.*`` is consumed here, on the FastStream broker's own
nats-py connection, and the benchmark's plain forwarder uses this same class so the ratio compares
verification only.

nats-py delivers a subscription's messages to its callback one at a time. The callback only takes a slot
and starts a task, so up to ``max_in_flight`` messages are verified at once: the JetStream nonce claims
(a publish with ack each) are pipelined instead of waited for one by one. When every slot is taken the
callback waits, messages queue in the subscription's pending buffer (limits below), and NATS slow-consumer
protection applies beyond that.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

log = logging.getLogger(__name__)

PENDING_MSGS_LIMIT = 1_000_000
PENDING_BYTES_LIMIT = 512 * 1024 * 1024

Handler = Callable[[Msg], Awaitable[object]]


class ConcurrentSubscription:
    """Queue subscription on ``subject`` whose messages run through ``handler`` concurrently."""

    def __init__(self, subject: str, queue: str, handler: Handler, *, max_in_flight: int) -> None:
        if max_in_flight < 1:
            raise ValueError("max_in_flight must be at least 1")
        self.subject = subject
        self.queue = queue
        self._handler = handler
        self._slots = asyncio.Semaphore(max_in_flight)
        self._tasks: set[asyncio.Task[None]] = set()
        self._sub: Subscription | None = None

    async def start(self, nc: Client) -> None:
        self._sub = await nc.subscribe(
            self.subject,
            queue=self.queue,
            cb=self._dispatch,
            pending_msgs_limit=PENDING_MSGS_LIMIT,
            pending_bytes_limit=PENDING_BYTES_LIMIT,
        )

    async def stop(self) -> None:
        """Stop receiving, let the messages already received finish (their publishes are then drained)."""
        if self._sub is not None:
            with contextlib.suppress(Exception):  # the connection may already be closing
                await self._sub.drain()  # type: ignore[no-untyped-call]  # nats-py leaves it unannotated
            self._sub = None
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    @property
    def in_flight(self) -> int:
        return len(self._tasks)

    async def _dispatch(self, msg: Msg) -> None:
        await self._slots.acquire()
        task = asyncio.create_task(self._run(msg))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, msg: Msg) -> None:
        try:
            await self._handler(msg)
        except Exception:  # one bad message must not stop the subscription
            log.exception("handling a message on %s failed", msg.subject)
        finally:
            self._slots.release()
