"""Composition root of toxicity-classifier: settings in, app out. Nothing is read at import time.

On startup the model artefact is loaded once (a failure stops the service before it serves); no database and
no NATS. ``/healthz`` and ``/readyz`` answer once it serves, so ready means the model is loaded.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI

from stockade.runtime.app import ServiceState, create_service_app
from stockade.toxicity_classifier.api import router
from stockade.toxicity_classifier.model import ToxicityModel
from stockade.toxicity_classifier.settings import ToxicityClassifierSettings

log = logging.getLogger(__name__)


def create_app(settings: ToxicityClassifierSettings | None = None) -> FastAPI:
    settings = settings or ToxicityClassifierSettings()

    async def on_startup(state: ServiceState[ToxicityModel]) -> ToxicityModel:
        model = ToxicityModel.load(settings.model_dir)
        log.info(
            "model loaded from %s: labels %s, %d terms",
            settings.model_dir,
            ", ".join(model.labels),
            sum(len(b.index) for b in model.blocks),
        )
        return model  # the service's own state: the routes read it with service_of(request, ToxicityModel)

    app = create_service_app(
        settings,
        title="toxicity-classifier: toxic / offensive / non-toxic (Hugging Face text-classification shape)",
        health_subject=None,
        uses_db=False,
        uses_nats=False,
        on_startup=on_startup,
    )
    app.include_router(router)
    return app
