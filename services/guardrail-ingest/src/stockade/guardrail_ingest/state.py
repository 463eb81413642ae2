"""What guardrail-ingest's startup hook builds and its shutdown hook stops (``create_service_app``'s typed state).

The parts after ``ingest`` exist only when their settings ask for them (``active.follow``, ``jetstream.workers``,
chdb reads, ``audit.enabled``).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from stockade.guardrail_ingest.active_store import ActiveStoreFollower
from stockade.guardrail_ingest.audit import AuditConsumer
from stockade.guardrail_ingest.ingest import Ingest
from stockade.guardrail_ingest.metrics import JetStreamSampler
from stockade.guardrail_ingest.sinks.router import StoreRouter
from stockade.guardrail_ingest.worker import SinkWorker


@dataclass
class IngestState:
    ingest: Ingest
    follower: ActiveStoreFollower | None = None
    sink: StoreRouter | None = None
    workers: list[SinkWorker] = field(default_factory=list)
    worker_tasks: list[asyncio.Task[None]] = field(default_factory=list)
    sampler: JetStreamSampler | None = None
    sampler_task: asyncio.Task[None] | None = None
    audits: list[AuditConsumer] = field(default_factory=list)
    audit_tasks: list[asyncio.Task[None]] = field(default_factory=list)
