"""Composition root of guardrail-ingest: settings in, app out. Nothing connects at import time.

On startup: JetStream stream ensured, the active store learnt from model-api (else the stream's last activation,
else the default) and followed from then on, ``jetstream.workers`` sink workers started on the shared durable
consumer (they create the active store's schema in the background and retry until it answers; the HTTP side
accepts meanwhile because JetStream holds the batches; each batch is written to the store it was accepted for).
The bus handlers (key revocations, activations, the console's read queries) are FastStream subscribers declared
on the service's broker here and started by the lifespan when the hook returns; the JetStream pull consumers (sink
workers, audit) use the broker's nats-py connection (README, "The bus").
On shutdown: the follower's resync stops, workers finish the batch in hand, then the subscribers stop and NATS
drains. A replica with sink workers also answers the console's typed reads of the run store
(``guardrail.cmd.read_runs.v2``): this service owns the store, and model-api reads it only through here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from fastapi import FastAPI

from stockade.contracts import subjects
from stockade.guardrail_ingest.active_store import ActiveState, ActiveStore, ActiveStoreFollower
from stockade.guardrail_ingest.api import router
from stockade.guardrail_ingest.audit import AUDITED, AuditConsumer
from stockade.guardrail_ingest.ingest import Ingest
from stockade.guardrail_ingest.jetstream import ensure_stream
from stockade.guardrail_ingest.metrics import JetStreamSampler
from stockade.guardrail_ingest.run_reads import RunReads
from stockade.guardrail_ingest.settings import GuardrailIngestSettings
from stockade.guardrail_ingest.sinks import SinkError
from stockade.guardrail_ingest.sinks.router import StoreRouter, Stores
from stockade.guardrail_ingest.state import IngestState
from stockade.guardrail_ingest.worker import SinkWorker
from stockade.runtime.app import ServiceState, create_service_app

log = logging.getLogger(__name__)
_STOP_GRACE_S = 5.0


def create_app(settings: GuardrailIngestSettings | None = None) -> FastAPI:
    settings = settings or GuardrailIngestSettings()
    background: set[asyncio.Task[None]] = set()
    stopping = asyncio.Event()  # the subscribers outlive on_shutdown a moment (they stop with the broker)

    def prepare_new_store(state: ActiveState) -> None:
        """Create the new store's schema now rather than on its first batch (errors: retried on that batch)."""
        if ingest.stores is None or not settings.jetstream.workers or stopping.is_set():
            return
        task = asyncio.create_task(_prepare(ingest.stores, state.db_type), name=f"prepare-{state.db_type}")
        background.add(task)
        task.add_done_callback(background.discard)

    active = ActiveStore(settings.sink.kind, on_change=prepare_new_store)
    ingest = Ingest(settings, active=active)

    async def on_startup(state: ServiceState[IngestState]) -> IngestState:
        assert state.nats is not None and state.broker is not None
        broker, nc = state.broker, state.nats
        own = IngestState(ingest=ingest)
        js = state.nats.jetstream()
        await ensure_stream(js, settings.jetstream, settings.nats.stream_replicas)
        ingest.js, ingest.nc = js, state.nats
        if ingest.keys is not None:  # per-project ingest keys: follow revocations (started before serving)
            ingest.keys.declare(broker, nc)
        else:
            log.warning("ingest.auth is 'open': anyone who reaches this service can store events")
        if settings.active.follow:
            follower = ActiveStoreFollower(active, settings.active)
            follower.declare(broker)
            await follower.start(nc)
            own.follower = follower
        if settings.jetstream.workers:
            sink = StoreRouter(settings.sink, lambda: active.db_type)
            ingest.stores = sink
            workers = [
                SinkWorker(js, sink, settings.jetstream, ingest.worker_stats)
                for _ in range(settings.jetstream.workers)
            ]
            tasks = [asyncio.create_task(w.run(), name=f"sink-worker-{i}") for i, w in enumerate(workers)]
            for task in tasks:
                task.add_done_callback(_log_exit)
            ingest.workers = len(workers)
            own.sink, own.workers, own.worker_tasks = sink, workers, tasks
            sampler = JetStreamSampler(js, settings.jetstream)  # consumer lag and stream sizes for /metrics
            own.sampler = sampler
            own.sampler_task = asyncio.create_task(sampler.run(), name="jetstream-sampler")
            if settings.reads.serve:  # the console reads the run store only through here (typed commands)
                reads = RunReads(sink, lambda: active.db_type, max_scan=settings.reads.max_scan)
                reads.declare(broker, lambda: nc.max_payload)
            if settings.audit.enabled:  # trust rejections and key revocations beside the run events
                audits = [
                    AuditConsumer(js, sink, lambda: active.db_type, settings.audit, subject)
                    for subject in AUDITED
                ]
                audit_tasks = [asyncio.create_task(a.run(), name=f"audit-{a.stream}") for a in audits]
                for task in audit_tasks:
                    task.add_done_callback(_log_exit)
                own.audits, own.audit_tasks = audits, audit_tasks
        return own

    async def on_shutdown(own: IngestState) -> None:
        stopping.set()
        if own.follower is not None:
            await own.follower.stop()
        for task in list(background):
            task.cancel()
        if own.sampler is not None and own.sampler_task is not None:
            own.sampler.stop()
            own.sampler_task.cancel()
            await asyncio.gather(own.sampler_task, return_exceptions=True)
        for audit in own.audits:
            audit.stop()
        for worker in own.workers:
            worker.stop()
        tasks = [*own.worker_tasks, *own.audit_tasks]
        if tasks:
            _, late = await asyncio.wait(tasks, timeout=_STOP_GRACE_S)
            for task in late:  # e.g. still waiting for an unreachable store: its batch is redelivered later
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        if own.sink is not None:
            with contextlib.suppress(Exception):
                await own.sink.aclose()

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


def _log_exit(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("%s stopped: %r", task.get_name(), task.exception())
