"""What a sink worker reads from, and tells, JetStream about one delivered message."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from nats.aio.msg import Msg
from prometheus_client import Counter

log = logging.getLogger("stockade.guardrail_ingest.worker")

DROPPED = Counter(
    "guardrail_ingest_events_dropped_total",
    "Events a store refused and the dead-letter stream refused too (full or missing), dropped after "
    "stream.dead_letter_give_up_after further deliveries so that no batch is retried forever.",
)


def drop_refused(refused: list[dict[str, Any]], batch_id: object, attempts: int, why: str) -> None:
    """Count and log events given up on: no store takes them and the dead-letter stream is full or missing."""
    DROPPED.inc(len(refused))
    ids = ", ".join(str(r.get("event_id"))[:64] for r in refused[:20])
    log.error(
        "DROPPED %d event(s) of batch %s after %d deliveries: the store refuses them and the dead-letter stream "
        "does not take them (%s). Event ids: %s%s",
        len(refused),
        batch_id,
        attempts,
        why,
        ids,
        " ..." if len(refused) > 20 else "",
    )


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
