"""Service layer of the HTTP path: a validated batch in, a durably queued JetStream message out."""

from __future__ import annotations

from dataclasses import dataclass, field

from nats.aio.client import Client
from nats.js import JetStreamContext

from stockade.contracts.ingest_wire import BatchAccepted, GuardrailBatch
from stockade.guardrail_ingest.active_store import ActiveStore
from stockade.guardrail_ingest.batching import EventTooLargeError, message_limit, split_batch
from stockade.guardrail_ingest.ingest_keys import IngestKeyVerifier
from stockade.guardrail_ingest.jetstream import publish_batch
from stockade.guardrail_ingest.quotas import IngestQuotas
from stockade.guardrail_ingest.records import batch_id, to_records
from stockade.guardrail_ingest.settings import GuardrailIngestSettings
from stockade.guardrail_ingest.sinks.router import Stores
from stockade.guardrail_ingest.worker import WorkerStats


class QueueUnavailableError(RuntimeError):
    """JetStream did not acknowledge the batch in time; nothing is promised to the client (503)."""


__all__ = ["EventTooLargeError", "Ingest", "QueueUnavailableError"]


@dataclass(frozen=True)
class Ingest:
    """What the routes need, built at startup with every part ready: the settings, JetStream and its connection,
    the active store, the key verifier and quotas, the stores and the sink workers' counters."""

    settings: GuardrailIngestSettings
    js: JetStreamContext
    nc: Client  # its max_payload (from the server's INFO) bounds one queued message
    active: ActiveStore  # model-api's active configuration (``sink.kind`` until one is known)
    keys: IngestKeyVerifier | None  # None: ``ingest.auth = "open"`` (no authentication)
    quotas: (
        IngestQuotas | None
    )  # per-key and per-project quotas; None with open auth (no keys to be fair between)
    stores: Stores | None = None  # None: this replica runs no sink workers
    workers: int = 0
    worker_stats: WorkerStats = field(default_factory=WorkerStats)

    @property
    def db_type(self) -> str:
        """The store batches accepted now are routed to (README, "Which store")."""
        return self.active.db_type

    async def accept(
        self, batch: GuardrailBatch, db_type: str | None = None, *, ingest_key_id: str | None = None
    ) -> BatchAccepted:
        """Publish the batch and return only after JetStream acknowledged it (then it survives restarts).

        ``db_type`` is the store the caller checked the request against (default: the active one now); the queued
        messages carry it, and the sink workers write them there even if the active store changes meanwhile.

        Records larger than one message may be are split into parts (see :mod:`.batching`); an event that alone
        does not fit raises :class:`EventTooLargeError` before anything is published.
        """
        store = db_type or self.db_type
        parts = split_batch(
            to_records(batch, ingest_key_id=ingest_key_id),
            db_type=store,
            correlation_id=batch.run.run_id,
            limit=message_limit(self.nc.max_payload),
        )
        duplicates = 0
        for part in parts:  # in order; a retried POST republishes the same parts, which JetStream drops
            try:
                ack = await publish_batch(
                    self.js, self.settings.jetstream, part, self.settings.ingest.publish_timeout_s
                )
            except Exception as exc:  # timeouts, no responders, stream errors: all mean "not queued"
                raise QueueUnavailableError(f"{type(exc).__name__}: {exc}") from exc
            duplicates += bool(ack.duplicate)
        return BatchAccepted(
            accepted=len(batch.events),
            batch_id=str(batch_id(batch)),
            duplicate=duplicates == len(parts),
            db_type=store,
            parts=len(parts),
        )
