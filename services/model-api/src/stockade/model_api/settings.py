"""Settings of model-api (environment prefix ``MODEL_API_``, nested with ``__``)."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from stockade.runtime.settings import HttpSettings, ServiceSettings


class ModelApiSettings(ServiceSettings):
    model_config = SettingsConfigDict(env_prefix="MODEL_API_", env_nested_delimiter="__", extra="ignore")

    service_name: str = "model-api"
    http: HttpSettings = Field(default_factory=lambda: HttpSettings(port=8102))
