"""Composition root of model-api: settings in, app out. Nothing connects at import time."""

from __future__ import annotations

from fastapi import FastAPI

from stockade.contracts import subjects
from stockade.model_api.settings import ModelApiSettings
from stockade.runtime.app import create_service_app


def create_app(settings: ModelApiSettings | None = None) -> FastAPI:
    settings = settings or ModelApiSettings()
    return create_service_app(settings, title="model-api: model catalogue and console", health_subject=subjects.MODEL_HEALTH)
