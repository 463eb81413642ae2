"""What a sink worker reads from, and tells, JetStream about one delivered message."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from nats.aio.msg import Msg


@contextlib.asynccontextmanager
async def in_progress(msgs: list[Msg], ack_wait_s: float) -> AsyncIterator[None]:
    """While the block runs, tell JetStream every quarter of ``ack_wait`` that these messages are being worked
    on, so a write slower than ``ack_wait`` (a large insert, a slow store) is not redelivered to another worker
    and written twice. A worker that dies stops telling, and its messages come back after ``ack_wait``."""

    async def beat() -> None:
        while True:
            await asyncio.sleep(ack_wait_s / 4)
            for msg in msgs:
                with contextlib.suppress(Exception):  # NATS reconnecting: the batch may come back, harmlessly
                    await msg.in_progress()

    beating = asyncio.create_task(beat(), name="ack-in-progress")
    try:
        yield
    finally:
        beating.cancel()
        await asyncio.gather(beating, return_exceptions=True)


def sequence_of(msg: Msg) -> int | None:
    """The message's stream sequence, for log lines and dead letters (None if it has no JetStream metadata)."""
    with contextlib.suppress(Exception):
        return int(msg.metadata.sequence.stream)
    return None


def deliveries_of(msg: Msg) -> int:
    """How many times JetStream has delivered the message (1 if it has no JetStream metadata)."""
    with contextlib.suppress(Exception):
        return int(msg.metadata.num_delivered)
    return 1
