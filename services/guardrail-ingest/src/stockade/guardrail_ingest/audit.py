"""The audit trail: trust-broker rejections and API-key revocations stored beside guardrail run events.

One durable pull consumer per stream (``TRUST`` for ``trust.rejected.v1``, ``IDENTITY`` for ``apikey.revoked.v1``),
shared by every replica. Each event becomes one record of the run-event shape (records.RECORD_FIELDS) with the
event's id as ``event_id``, written to the active store; the message is acknowledged only after the write, and a
redelivered event is a duplicate of the stored one (every sink is idempotent on ``event_id``). Records carry
names, reasons and key ids, never a payload, signature or key material.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from nats.aio.msg import Msg
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from pydantic import ValidationError

from stockade.contracts import ApiKeyRevoked, TrustRejected, subjects
from stockade.contracts.streams import audit_consumer
from stockade.guardrail_ingest.settings import AuditSettings
from stockade.guardrail_ingest.sinks.base import SinkError
from stockade.guardrail_ingest.sinks.router import Stores
from stockade.runtime.tracing import consumer_span

log = logging.getLogger(__name__)
AUDITED: tuple[str, ...] = (subjects.TRUST_REJECTED, subjects.APIKEY_REVOKED)


def _base(event: TrustRejected | ApiKeyRevoked, project_id: str | None) -> dict[str, Any]:
    return {
        "event_id": str(event.event_id),
        "occurred_at": event.occurred_at.isoformat(),
        "session_id": None,
        "project_id": project_id,
        "agent_id": None,
        "environment": None,
        "prompt_name": None,
        "prompt_version": None,
        "correlation_id": event.correlation_id,
        "labels": {"source": event.subject},
        "received_at": datetime.now(UTC).isoformat(),
        "ingest_key_id": None,  # written by the platform, not through an ingest key
    }


def to_record(subject: str, data: bytes, default_project: str | None) -> dict[str, Any]:
    """The stored record of one audited event (ValidationError / ValueError when it cannot be decoded).

    ``project_id`` is the event's own when a producer adds one (allowed within v1), else ``default_project``.
    A trust rejection: kind ``trust``, action ``block``, ``payload.reason`` (what the console overview counts).
    A revocation: kind ``audit``, action ``revoke``, the key id and owner (no key material exists in the event).
    """
    raw = json.loads(data)
    project = raw.get("project_id") if isinstance(raw, dict) else None
    project = project if isinstance(project, str) and project else default_project
    if subject == subjects.TRUST_REJECTED:
        t = TrustRejected.model_validate(raw)
        return {
            **_base(t, project),
            "run_id": f"trust:{t.event_id}",
            "kind": "trust",
            "name": t.reason,
            "action": "block",
            "agent_id": t.sender,
            "payload": {"reason": t.reason, "layer": t.layer, "sender": t.sender, "receiver": t.receiver},
        }
    if subject == subjects.APIKEY_REVOKED:
        k = ApiKeyRevoked.model_validate(raw)
        return {
            **_base(k, project),
            "run_id": f"apikey:{k.key_id}",
            "kind": "audit",
            "name": "apikey.revoked",
            "action": "revoke",
            "payload": {"reason": "apikey_revoked", "key_id": k.key_id, "owner_id": k.owner_id},
        }
    raise ValueError(f"not an audited subject: {subject!r}")


class AuditConsumer:
    """Reads one audited subject from its stream and writes each event to the active store."""

    def __init__(
        self,
        js: JetStreamContext,
        stores: Stores,
        active: Callable[[], str],
        settings: AuditSettings,
        subject: str,
        *,
        fetch_timeout_s: float = 1.0,
        retry_delay_s: float = 2.0,
    ) -> None:
        self.js, self.stores, self.active, self.settings, self.subject = js, stores, active, settings, subject
        self.stream = subjects.stream_for(subject)
        self.durable = audit_consumer(settings.durable, self.stream)
        self.fetch_timeout_s, self.retry_delay_s = fetch_timeout_s, retry_delay_s
        self.stored = 0
        self.duplicates = 0
        self.last_error: str | None = None
        self._stop = asyncio.Event()

    def stop(self) -> None:
        self._stop.set()

    async def run(self) -> None:
        """Consume until stop(); a missing stream (its producer has not started yet) or a lost connection is
        retried every ``retry_delay_s``: unacknowledged events stay in the stream meanwhile."""
        while not self._stop.is_set():
            try:
                await self._consume()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"
                if error != self.last_error:  # e.g. the stream not made yet: said once, not every retry
                    log.warning(
                        "audit consumer %s: %s; retrying every %ss", self.stream, error, self.retry_delay_s
                    )
                self.last_error = error
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), timeout=self.retry_delay_s)

    async def _consume(self) -> None:
        config = ConsumerConfig(
            durable_name=self.durable,
            ack_policy=AckPolicy.EXPLICIT,
            deliver_policy=DeliverPolicy.ALL,
            ack_wait=30.0,
            max_deliver=-1,
            filter_subject=self.subject,
        )
        sub = await self.js.pull_subscribe(
            self.subject, durable=self.durable, stream=self.stream, config=config
        )
        try:
            while not self._stop.is_set():
                try:
                    msgs = await sub.fetch(64, timeout=self.fetch_timeout_s)
                except (NatsTimeoutError, TimeoutError):
                    continue
                await self.handle(msgs)
        finally:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()

    async def handle(self, msgs: list[Msg]) -> None:
        records: list[tuple[Msg, dict[str, Any]]] = []
        for msg in msgs:
            try:
                records.append((msg, to_record(msg.subject, msg.data, self.settings.project_id)))
            except (ValidationError, ValueError) as exc:
                log.error("dropping undecodable %s event: %s", msg.subject, exc)
                await msg.term()
        if not records:
            return
        # Stored in the trace the (first) rejection carried, if any: the agent's submission, through the broker.
        with consumer_span("guardrail.audit", records[0][0].headers):
            await self._store(records)

    async def _store(self, records: list[tuple[Msg, dict[str, Any]]]) -> None:
        by_id = {r["event_id"]: r for _, r in records}
        kind = self.active()
        try:
            sink = await self.stores.sink_for(kind)
            # Always look the ids up: a producer may publish an event again after JetStream's duplicate window
            # (an outbox replay), as a first delivery of a new message; audit traffic is small.
            outcome = await sink.write(list(by_id.values()), maybe_stored=True)
        except SinkError as exc:
            self.last_error = str(exc)
            log.warning("audit records not stored in %s (redelivered later): %s", kind, exc)
            for msg, _ in records:
                await msg.nak(delay=self.retry_delay_s)
            return
        self.stored += outcome.inserted
        self.duplicates += outcome.duplicates
        for msg, record in records:
            if record["event_id"] in outcome.rejected:
                log.error("store %s refused audit record %s: %s", kind, record["event_id"], outcome.rejected)
                await msg.nak(delay=self.retry_delay_s)
            else:
                await msg.ack_sync()
