"""Composition root of guardrail-ingest: settings in, app out. Nothing connects at import time."""

from __future__ import annotations

from fastapi import FastAPI

from stockade.contracts import subjects
from stockade.guardrail_ingest.settings import GuardrailIngestSettings
from stockade.runtime.app import create_service_app


def create_app(settings: GuardrailIngestSettings | None = None) -> FastAPI:
    settings = settings or GuardrailIngestSettings()
    return create_service_app(settings, title="guardrail-ingest: guardrail run events to the configured store", health_subject=subjects.GUARDRAIL_HEALTH)
