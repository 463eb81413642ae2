"""Settings of guardrail-ingest (environment prefix ``GUARDRAIL_INGEST_``, nested with ``__``)."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from stockade.runtime.settings import HttpSettings, ServiceSettings


class GuardrailIngestSettings(ServiceSettings):
    model_config = SettingsConfigDict(env_prefix="GUARDRAIL_INGEST_", env_nested_delimiter="__", extra="ignore")

    service_name: str = "guardrail-ingest"
    http: HttpSettings = Field(default_factory=lambda: HttpSettings(port=8103))
