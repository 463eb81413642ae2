"""Service layer of the HTTP path: a validated batch in, a durably queued JetStream message out."""

from __future__ import annotations

from dataclasses import dataclass, field

from nats.js import JetStreamContext

from stockade.contracts import GuardrailEventsReceived
from stockade.guardrail_ingest.jetstream import publish_batch
from stockade.guardrail_ingest.records import batch_id, to_records
from stockade.guardrail_ingest.settings import GuardrailIngestSettings
from stockade.guardrail_ingest.worker import WorkerStats
from stockade.guardrails.storage.wire import BatchAccepted, GuardrailBatch


class QueueUnavailableError(RuntimeError):
    """JetStream did not acknowledge the batch in time; nothing is promised to the client (503)."""


@dataclass
class Ingest:
    """What the routes need: the settings, JetStream, and the sink workers' counters."""

    settings: GuardrailIngestSettings
    js: JetStreamContext | None = None
    worker_stats: WorkerStats = field(default_factory=WorkerStats)
    workers: int = 0

    @property
    def db_type(self) -> str:
        return self.settings.sink.kind

    async def accept(self, batch: GuardrailBatch) -> BatchAccepted:
        """Publish the batch and return only after JetStream acknowledged it (then it survives restarts)."""
        if self.js is None:
            raise QueueUnavailableError("JetStream is not connected")
        bid = batch_id(batch)
        records = to_records(batch)
        message = GuardrailEventsReceived(
            event_id=bid, correlation_id=batch.run.run_id, db_type=self.db_type, events=records
        )
        try:
            ack = await publish_batch(
                self.js, self.settings.jetstream, message, self.settings.ingest.publish_timeout_s
            )
        except Exception as exc:  # timeouts, no responders, stream errors: all mean "not queued"
            raise QueueUnavailableError(f"{type(exc).__name__}: {exc}") from exc
        return BatchAccepted(
            accepted=len(batch.events), batch_id=str(bid), duplicate=bool(ack.duplicate), db_type=self.db_type
        )
