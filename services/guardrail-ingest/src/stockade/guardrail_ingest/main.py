"""Composition root of guardrail-ingest: settings in, app out. Nothing connects at import time.

On startup: JetStream stream ensured, ``jetstream.workers`` sink workers started on the shared durable consumer
(they create the store's schema in the background and retry until the store answers; the HTTP side accepts
meanwhile because JetStream holds the batches). On shutdown: workers finish the batch in hand, then NATS drains.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from fastapi import FastAPI

from stockade.contracts import subjects
from stockade.guardrail_ingest.api import router
from stockade.guardrail_ingest.ingest import Ingest
from stockade.guardrail_ingest.jetstream import ensure_stream
from stockade.guardrail_ingest.settings import GuardrailIngestSettings
from stockade.guardrail_ingest.sinks import build_sink
from stockade.guardrail_ingest.worker import SinkWorker
from stockade.runtime.app import ServiceState, create_service_app

log = logging.getLogger(__name__)
_STOP_GRACE_S = 5.0


def create_app(settings: GuardrailIngestSettings | None = None) -> FastAPI:
    settings = settings or GuardrailIngestSettings()
    ingest = Ingest(settings)

    async def on_startup(state: ServiceState) -> None:
        assert state.nats is not None
        js = state.nats.jetstream()
        await ensure_stream(js, settings.jetstream)
        ingest.js, ingest.nc = js, state.nats
        if settings.jetstream.workers:
            sink = build_sink(settings.sink)
            workers = [
                SinkWorker(js, sink, settings.jetstream, ingest.worker_stats)
                for _ in range(settings.jetstream.workers)
            ]
            tasks = [asyncio.create_task(w.run(), name=f"sink-worker-{i}") for i, w in enumerate(workers)]
            for task in tasks:
                task.add_done_callback(_log_exit)
            ingest.workers = len(workers)
            state.extras["workers"] = (workers, tasks, sink)

    async def on_shutdown(state: ServiceState) -> None:
        workers, tasks, sink = state.extras.pop("workers", ([], [], None))
        for worker in workers:
            worker.stop()
        if tasks:
            _, late = await asyncio.wait(tasks, timeout=_STOP_GRACE_S)
            for task in late:  # e.g. still waiting for an unreachable store: its batch is redelivered later
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        if sink is not None:
            with contextlib.suppress(Exception):
                await sink.aclose()

    app = create_service_app(
        settings,
        title="guardrail-ingest: guardrail run events to the configured store",
        health_subject=subjects.GUARDRAIL_HEALTH,
        on_startup=on_startup,
        on_shutdown=on_shutdown,
    )
    app.state.service.extras["ingest"] = ingest
    app.include_router(router)
    return app


def _log_exit(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("%s stopped: %r", task.get_name(), task.exception())
