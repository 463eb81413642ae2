"""Composition root of guardrail-ingest: settings in, app out. Nothing connects at import time.

On startup every adapter is built ready-made and handed to :class:`Ingest` (the routes' one object, frozen): the
JetStream stream ensured, the active store learnt from model-api (else the stream's last activation, else the
default) and followed from then on, ``jetstream.workers`` sink workers started on the shared durable consumer
(they create the active store's schema in the background and retry until it answers; the HTTP side accepts
meanwhile because JetStream holds the batches; each batch is written to the store it was accepted for). The
bus handlers (key revocations, activations, the console's read queries) are declared on the service's broker
here and started by the lifespan when the hook returns; the JetStream pull consumers (sink workers, audit) use
the broker's nats-py connection (README, "The bus"). A replica with sink workers also answers the console's
typed reads of the run store (``guardrail.cmd.read_runs.v2``): this service owns the store, and model-api reads
it only through here.

The loops (sink workers, audit consumers, the JetStream sampler, a new store's schema preparation) run as
:class:`stockade.runtime.background.Tasks`. On shutdown the follower's resync stops, every loop is asked to
finish the batch in hand (``_STOP_GRACE_S``, then cancelled: a batch not acknowledged is redelivered later),
the stores close, then the subscribers stop and NATS drains.
"""

from __future__ import annotations

import contextlib
import logging

from fastapi import FastAPI

from stockade.contracts import subjects
from stockade.guardrail_ingest.active_store import ActiveState, ActiveStore, ActiveStoreFollower
from stockade.guardrail_ingest.api import router
from stockade.guardrail_ingest.audit import AUDITED, AuditConsumer
from stockade.guardrail_ingest.ingest import Ingest
from stockade.guardrail_ingest.ingest_keys import IngestKeyVerifier
from stockade.guardrail_ingest.jetstream import ensure_stream
from stockade.guardrail_ingest.metrics import JetStreamSampler
from stockade.guardrail_ingest.quotas import IngestQuotas
from stockade.guardrail_ingest.run_reads import RunReads
from stockade.guardrail_ingest.settings import GuardrailIngestSettings
from stockade.guardrail_ingest.sinks import SinkError
from stockade.guardrail_ingest.sinks.router import StoreRouter, Stores
from stockade.guardrail_ingest.state import IngestState
from stockade.guardrail_ingest.worker import SinkWorker, WorkerStats
from stockade.runtime.app import ServiceState, create_service_app
from stockade.runtime.background import Tasks

log = logging.getLogger(__name__)
_STOP_GRACE_S = 5.0


def create_app(settings: GuardrailIngestSettings | None = None) -> FastAPI:
    settings = settings or GuardrailIngestSettings()

    async def on_startup(state: ServiceState[IngestState]) -> IngestState:
        assert state.nats is not None and state.broker is not None  # create_service_app waits for NATS
        broker, nc = state.broker, state.nats
        js = nc.jetstream()
        await ensure_stream(js, settings.jetstream, settings.nats.stream_replicas)
        tasks = Tasks(service=settings.service_name)
        workers = settings.jetstream.workers
        active = ActiveStore(settings.sink.kind, on_change=lambda new: prepare(new))
        stores = StoreRouter(settings.sink, lambda: active.db_type) if workers else None

        def prepare(new: ActiveState) -> None:
            """Create a new active store's schema now rather than on its first batch (errors: retried then)."""
            # the subscribers outlive the shutdown hook a moment (they stop with the broker)
            if stores is not None and not tasks.stopping:
                tasks.start(f"prepare-{new.db_type}", _prepare(stores, new.db_type))

        keys = quotas = None
        if (
            settings.ingest.auth == "keys"
        ):  # per-project ingest keys: follow revocations (started before serving)
            keys = IngestKeyVerifier(settings.ingest)
            keys.declare(broker, nc)
            quotas = IngestQuotas(settings.ingest.quotas)  # open: no keys to be fair between
        else:
            log.warning("ingest.auth is 'open': anyone who reaches this service can store events")
        follower = None
        if settings.active.follow:
            follower = ActiveStoreFollower(active, settings.active)
            follower.declare(broker)
            await follower.start(nc)
        stats = WorkerStats()
        if stores is not None:
            for i in range(workers):
                worker = SinkWorker(js, stores, settings.jetstream, stats)
                tasks.start(f"sink-worker-{i}", worker.run(), stop=worker.stop)
            sampler = JetStreamSampler(js, settings.jetstream)  # consumer lag and stream sizes for /metrics
            tasks.start("jetstream-sampler", sampler.run(), stop=sampler.stop)
            if settings.reads.serve:  # the console reads the run store only through here (typed commands)
                reads = RunReads(stores, lambda: active.db_type, max_scan=settings.reads.max_scan)
                reads.declare(broker, lambda: nc.max_payload)
            if settings.audit.enabled:  # trust rejections and key revocations beside the run events
                for subject in AUDITED:
                    audit = AuditConsumer(js, stores, lambda: active.db_type, settings.audit, subject)
                    tasks.start(f"audit-{audit.stream}", audit.run(), stop=audit.stop)
        ingest = Ingest(
            settings,
            js=js,
            nc=nc,
            active=active,
            keys=keys,
            quotas=quotas,
            stores=stores,
            workers=workers if stores is not None else 0,
            worker_stats=stats,
        )
        return IngestState(ingest=ingest, tasks=tasks, follower=follower, stores=stores)

    async def on_shutdown(own: IngestState) -> None:
        if own.follower is not None:
            await own.follower.stop()
        await own.tasks.stop(_STOP_GRACE_S)
        if own.stores is not None:
            with contextlib.suppress(Exception):
                await own.stores.aclose()

    app = create_service_app(
        settings,
        title="guardrail-ingest: guardrail run events to the configured store",
        health_subject=subjects.GUARDRAIL_HEALTH,
        uses_db=False,  # run events go to the active store; no SQL database (none created, none written)
        on_startup=on_startup,
        on_shutdown=on_shutdown,
    )
    app.include_router(router)
    return app


async def _prepare(stores: Stores, kind: str) -> None:
    try:
        await stores.sink_for(kind)
    except SinkError as exc:
        log.warning("new active store %s not ready yet (retried with its first batch): %s", kind, exc)
