"""guardrail-ingest's Prometheus metrics (served on ``/metrics`` with the shared ones of stockade.runtime).

- ``stockade_guardrail_check_decisions_total{check, action}``: ``check`` events by check name and action, counted
  as the sink workers store them (an event the store already held is not counted again; a batch redelivered
  after a worker died mid-write may count its events twice).
- ``stockade_guardrail_events_stored_total{kind}``, ``stockade_guardrail_store_errors_total{store}``.
- The sink consumer's lag (``num_pending``) and ack-pending count, and the events and dead-letter streams' sizes,
  sampled every ``SAMPLE_EVERY_S`` by :class:`JetStreamSampler` (``stockade_jetstream_*``).

Check names come from clients: a name that is not a short identifier counts as ``other``, and past
``MAX_CHECK_LABELS`` distinct (check, action) pairs new pairs count as ``other`` too, so a client cannot grow the
series without bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Iterable
from typing import Any

from nats.js import JetStreamContext
from prometheus_client import Counter

from stockade.guardrail_ingest.settings import StreamSettings
from stockade.runtime.metrics import CONSUMER_ACK_PENDING, CONSUMER_PENDING, STREAM_MESSAGES

log = logging.getLogger(__name__)

SAMPLE_EVERY_S = 10.0
MAX_CHECK_LABELS = 500
OTHER = "other"
_LABEL = re.compile(r"^[A-Za-z][A-Za-z0-9_.:-]{0,63}$")

CHECK_DECISIONS = Counter(
    "stockade_guardrail_check_decisions",
    "Guardrail check decisions stored, by check name and action (allow, block, redact, ...).",
    ["check", "action"],
)
EVENTS_STORED = Counter(
    "stockade_guardrail_events_stored", "Guardrail events newly stored, by event kind.", ["kind"]
)
STORE_ERRORS = Counter(
    "stockade_guardrail_store_errors",
    "Writes the event store failed (the batches are redelivered).",
    ["store"],
)

_seen: set[tuple[str, str]] = set()


def _label(value: Any) -> str:
    return value if isinstance(value, str) and _LABEL.match(value) else OTHER


def count_stored(records: Iterable[dict[str, Any]]) -> None:
    """Count events a write stored for the first time: their kinds, and the decisions of ``check`` events."""
    for record in records:
        kind = _label(record.get("kind"))
        EVENTS_STORED.labels(kind).inc()
        if kind != "check":
            continue
        pair = (_label(record.get("name")), _label(record.get("action")))
        if pair not in _seen:
            if len(_seen) >= MAX_CHECK_LABELS:
                pair = (OTHER, OTHER)
            _seen.add(pair)
        CHECK_DECISIONS.labels(*pair).inc()


class JetStreamSampler:
    """Every ``every_s``: the sink consumer's pending and ack-pending messages, and the events and dead-letter
    streams' message counts, into gauges. A failed sample (NATS away) leaves the last values and is retried."""

    def __init__(
        self, js: JetStreamContext, settings: StreamSettings, every_s: float = SAMPLE_EVERY_S
    ) -> None:
        self.js, self.settings, self.every_s = js, settings, every_s
        self._stop = asyncio.Event()

    async def sample(self) -> None:
        s = self.settings
        info = await self.js.consumer_info(s.stream, s.durable)
        CONSUMER_PENDING.labels(s.stream, s.durable).set(info.num_pending or 0)
        CONSUMER_ACK_PENDING.labels(s.stream, s.durable).set(info.num_ack_pending or 0)
        for stream in (s.stream, s.dead_letter_stream):
            state = (await self.js.stream_info(stream)).state
            STREAM_MESSAGES.labels(stream).set(state.messages or 0)

    async def run(self) -> None:
        while not self._stop.is_set():
            try:
                await self.sample()
            except Exception as exc:  # the consumer is made by the first worker; NATS may be reconnecting
                log.debug("JetStream sample failed: %s", exc)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), timeout=self.every_s)

    def stop(self) -> None:
        self._stop.set()
