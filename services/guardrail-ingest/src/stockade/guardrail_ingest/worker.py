"""Sink workers: a durable JetStream pull consumer shared by every replica (a queue, not a fan-out).

Each message is one accepted batch. A worker writes the batch to the store it names (``db_type``, fixed when the
batch was accepted, whatever store is active now) and acknowledges it only after the write succeeded; while the
write runs it marks the message in progress, so a slow write is not redelivered. If the worker dies mid-batch
(process killed, task cancelled), the message is redelivered after ``ack_wait`` and written again, which is
harmless because every sink write is idempotent on ``event_id``. A store error naks the message with a delay; a
message that cannot be decoded is terminated (logged, never retried). An event the store refuses on its own (the
sink reports it in ``WriteOutcome.rejected``; the rest of the batch is stored) naks its batch too, and on the
``dead_letter_after``-th delivery goes to the dead-letter stream with the store's reason, after which the batch is
acknowledged.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from typing import Any, cast

from nats.aio.msg import Msg
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from pydantic import ValidationError

from stockade.contracts import GuardrailEventsReceived
from stockade.guardrail_ingest.dead_letters import dead_letter, publish_dead_letter
from stockade.guardrail_ingest.delivery import deliveries_of, drop_refused, in_progress, sequence_of
from stockade.guardrail_ingest.metrics import STORE_ERRORS, count_stored
from stockade.guardrail_ingest.settings import StreamSettings
from stockade.guardrail_ingest.sinks.base import EventSink, SinkError
from stockade.guardrail_ingest.sinks.router import FixedStore, StoreRouter, Stores
from stockade.runtime.metrics import DEAD_LETTERS
from stockade.runtime.tracing import consumer_span

log = logging.getLogger(__name__)


@dataclass
class WorkerStats:
    batches: int = 0
    inserted: int = 0
    duplicates: int = 0
    store_errors: int = 0
    poison: int = 0
    refused: int = 0  # events the store refused, retried later (counted per delivery)
    dead_lettered: int = 0  # events sent to the dead-letter stream
    dropped: int = 0  # refused events dropped: the dead-letter stream refused them too, past the bound
    last_error: str | None = None
    schema_ready: bool = False
    extra: dict[str, int] = field(default_factory=dict)


def consumer_config(settings: StreamSettings) -> ConsumerConfig:
    return ConsumerConfig(
        durable_name=settings.durable,
        ack_policy=AckPolicy.EXPLICIT,
        deliver_policy=DeliverPolicy.ALL,
        ack_wait=settings.ack_wait_s,
        max_deliver=-1,
        filter_subject=settings.subject,
        max_ack_pending=1000,
    )


class SinkWorker:
    """One pull loop. Several run per process and across replicas on the same durable consumer."""

    def __init__(
        self,
        js: JetStreamContext,
        sink: EventSink | Stores,
        settings: StreamSettings,
        stats: WorkerStats | None = None,
    ) -> None:
        """``sink``: the stores a batch is routed to by its ``db_type`` (:class:`StoreRouter`), or one sink that
        takes every batch."""
        self.js, self.settings = js, settings
        self.stores: Stores = (
            sink if isinstance(sink, (StoreRouter, FixedStore)) else FixedStore(cast(EventSink, sink))
        )
        self.stats = stats or WorkerStats()
        self._stop = asyncio.Event()

    def stop(self) -> None:
        """Finish the message in hand, then return from run()."""
        self._stop.set()

    async def run(self) -> None:
        """With one sink, wait until its schema is ready, then consume. With a router, prepare the active store in
        the background and consume at once: batches queued for another store must not wait for this one."""
        preparing: asyncio.Task[None] | None = None
        if isinstance(self.stores, StoreRouter):
            preparing = asyncio.create_task(self._ensure_schema(), name="prepare-active-store")
        else:
            await self._ensure_schema()
        try:
            while not self._stop.is_set():
                try:
                    await self._consume()
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # NATS reconnecting, JetStream not ready: unacked batches come back
                    self.stats.last_error = f"{type(exc).__name__}: {exc}"
                    log.warning("sink worker: %s; resubscribing in 1s", self.stats.last_error)
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._stop.wait(), timeout=1.0)
        finally:
            if preparing is not None:
                preparing.cancel()
                await asyncio.gather(preparing, return_exceptions=True)

    async def _consume(self) -> None:
        sub = await self.js.pull_subscribe(
            self.settings.subject,
            durable=self.settings.durable,
            stream=self.settings.stream,
            config=consumer_config(self.settings),
        )
        try:
            while not self._stop.is_set():
                try:
                    msgs = await sub.fetch(self.settings.fetch_batch, timeout=self.settings.fetch_timeout_s)
                except (NatsTimeoutError, TimeoutError):
                    continue
                await self.handle_many(await self._linger(sub, msgs))
        finally:
            with contextlib.suppress(Exception):  # unsubscribe before drain, or drain hangs (ENVIRONMENT.md)
                await sub.unsubscribe()

    async def _linger(self, sub: Any, msgs: list[Msg]) -> list[Msg]:
        """Pull more for up to ``linger_s`` while the write is smaller than ``fetch_batch`` messages: under a
        steady flow each pull returns one or two batches, and many small inserts cost far more than one."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settings.linger_s
        while len(msgs) < self.settings.fetch_batch and not self._stop.is_set():
            remaining = deadline - loop.time()
            if remaining <= 0.001:
                break
            try:
                msgs = msgs + await sub.fetch(self.settings.fetch_batch - len(msgs), timeout=remaining)
            except (NatsTimeoutError, TimeoutError):
                break
        return msgs

    async def handle(self, msg: Msg) -> None:
        await self.handle_many([msg])

    async def handle_many(self, msgs: list[Msg]) -> None:
        """Store the batches of one fetch with one write (fewer, larger inserts), then ack each of them."""
        decoded: list[tuple[Msg, GuardrailEventsReceived]] = []
        for msg in msgs:
            try:
                decoded.append((msg, GuardrailEventsReceived.model_validate_json(msg.data)))
            except ValidationError as exc:
                self.stats.poison += 1
                log.error("dropping undecodable guardrail batch (seq %s): %s", sequence_of(msg), exc)
                await msg.term()
        by_store: dict[str, list[tuple[Msg, GuardrailEventsReceived]]] = {}
        for msg, batch in decoded:  # each batch goes to the store it was accepted for (README, "Which store")
            by_store.setdefault(batch.db_type, []).append((msg, batch))
        for kind, group in by_store.items():
            # The write continues the trace of the (first) batch it stores: its log lines and dead letters carry it.
            with consumer_span("guardrail.store", group[0][0].headers):
                await self._store(kind, group)

    async def _store(self, kind: str, decoded: list[tuple[Msg, GuardrailEventsReceived]]) -> None:
        """One write of these batches to store ``kind``, then ack (or nak on a store error)."""
        records: dict[str, dict[str, Any]] = {}  # one write per event_id even when batches overlap
        for _, batch in decoded:
            for record in batch.events:
                records.setdefault(str(record.get("event_id")), record)
        overlap = sum(len(batch.events) for _, batch in decoded) - len(records)
        # A batch delivered before may be stored in part (a worker died or timed out mid-write, a store error, a
        # refused event): only then must a store that writes without looking check which ids it holds.
        maybe_stored = any(deliveries_of(msg) > 1 for msg, _ in decoded)
        try:
            async with in_progress([msg for msg, _ in decoded], self.settings.ack_wait_s):
                sink = await self.stores.sink_for(kind)
                outcome = await sink.write(list(records.values()), maybe_stored=maybe_stored)
        except SinkError as exc:
            self.stats.store_errors += 1
            STORE_ERRORS.labels(kind).inc()
            self.stats.last_error = str(exc)
            log.warning(
                "store %s failed for %d batch(es), redelivering in %ss: %s",
                kind,
                len(decoded),
                self.settings.retry_delay_s,
                exc,
            )
            for msg, _ in decoded:
                await msg.nak(delay=self.settings.retry_delay_s)
            return
        self.stats.inserted += outcome.inserted
        self.stats.duplicates += outcome.duplicates + overlap
        if outcome.inserted:
            # Every stored record is new unless some were held already (a redelivery after a partial write);
            # then which ones is unknown and as many as were inserted are counted.
            stored = [r for event_id, r in records.items() if event_id not in outcome.rejected]
            count_stored(stored[: outcome.inserted])
        acks: list[Msg] = []
        for msg, batch in decoded:
            refused = [r for r in batch.events if str(r.get("event_id")) in outcome.rejected]
            if refused and not await self._dead_letter(msg, batch, refused, outcome.rejected):
                continue
            acks.append(msg)
        # Acknowledge the stored batches together (one round trip's wait, not one per batch). An ack that fails
        # leaves its batch to be redelivered, and written again harmlessly; the others still count.
        results = await asyncio.gather(*(msg.ack_sync() for msg in acks), return_exceptions=True)
        failed = [r for r in results if isinstance(r, BaseException)]
        self.stats.batches += len(acks) - len(failed)
        if failed:
            raise failed[0]

    async def _dead_letter(
        self, msg: Msg, batch: GuardrailEventsReceived, refused: list[dict[str, Any]], reasons: dict[str, str]
    ) -> bool:
        """True when the refused events are in the dead-letter stream (ack the batch); else the batch is nak'ed
        and comes back: its stored events count as duplicates then, the refused ones are tried again."""
        attempts = deliveries_of(msg)
        first = reasons[str(refused[0].get("event_id"))]
        self.stats.last_error = first
        if attempts < self.settings.dead_letter_after:
            self.stats.refused += len(refused)
            log.warning(
                "store refused %d event(s) of batch %s (delivery %d of %d): %s",
                len(refused),
                batch.event_id,
                attempts,
                self.settings.dead_letter_after,
                first,
            )
            await msg.nak(delay=self.settings.retry_delay_s)
            return False
        try:
            for record in refused:
                letter = dead_letter(
                    record,
                    reason=reasons[str(record.get("event_id"))],
                    attempts=attempts,
                    batch=batch,
                    sequence=sequence_of(msg),
                )
                await publish_dead_letter(self.js, self.settings, letter)
        except (
            Exception
        ) as exc:  # dead-letter stream missing or full: try again later, a bounded number of times
            self.stats.store_errors += 1
            self.stats.last_error = f"dead-letter stream: {type(exc).__name__}: {exc}"
            if attempts >= self.settings.dead_letter_after + self.settings.dead_letter_give_up_after:
                drop_refused(refused, batch.event_id, attempts, self.stats.last_error)
                self.stats.dropped += len(refused)
                return True  # ack: the batch's other events are stored, it never blocks the consumer again
            log.warning("cannot dead-letter %d event(s): %s", len(refused), self.stats.last_error)
            await msg.nak(delay=self.settings.retry_delay_s)
            return False
        self.stats.dead_lettered += len(refused)
        DEAD_LETTERS.labels(self.settings.dead_letter_stream).inc(len(refused))
        log.error(
            "dead-lettered %d event(s) of batch %s after %d deliveries: %s",
            len(refused),
            batch.event_id,
            attempts,
            first,
        )
        return True

    async def _ensure_schema(self) -> None:
        """Retry until the store answers: the HTTP side keeps accepting meanwhile (JetStream holds batches)."""
        delay = 0.5
        while not self._stop.is_set():
            attempt = asyncio.ensure_future(self.stores.prepare())
            stopping = asyncio.ensure_future(self._stop.wait())
            await asyncio.wait({attempt, stopping}, return_when=asyncio.FIRST_COMPLETED)
            stopping.cancel()
            if not attempt.done():  # stop requested while the store is still unreachable
                attempt.cancel()
                await asyncio.gather(attempt, return_exceptions=True)
                return
            try:
                attempt.result()
                self.stats.schema_ready = True
                return
            except SinkError as exc:
                self.stats.last_error = str(exc)
                log.warning("event store not ready (%s); retrying in %.1fs", exc, delay)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), timeout=delay)
                delay = min(delay * 2, 15.0)
