"""Settings of toxicity-classifier (environment prefix ``TOXICITY_CLASSIFIER_``, nested with ``__``).

``TOXICITY_CLASSIFIER_API_KEY`` turns on bearer authentication of ``POST /classify``;
``TOXICITY_CLASSIFIER_LIMITS__MAX_CHARS`` bounds one text.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field, SecretStr, field_validator
from pydantic_settings import SettingsConfigDict

from stockade.runtime.settings import HttpSettings, ServiceSettings
from stockade.toxicity_classifier.model import DEFAULT_MODEL_DIR


class LimitSettings(BaseModel):
    """Bounds of one request (over them: 422, or 413 for the body size)."""

    max_chars: int = Field(default=20_000, gt=0, description="Characters of one text.")
    max_batch: int = Field(default=32, gt=0, description="Texts in one request (inputs as a list).")
    max_body_bytes: int = Field(default=4 * 1024 * 1024, ge=1024, description="Request body size.")


class ToxicityClassifierSettings(ServiceSettings):
    model_config = SettingsConfigDict(
        env_prefix="TOXICITY_CLASSIFIER_", env_nested_delimiter="__", extra="ignore"
    )

    service_name: str = "toxicity-classifier"
    http: HttpSettings = Field(default_factory=lambda: HttpSettings(port=8104))
    api_key: SecretStr | None = Field(
        default=None, description="When set, POST /classify requires 'Authorization: Bearer <api_key>'."
    )
    model_dir: Path = Field(
        default=DEFAULT_MODEL_DIR, description="Model artefact directory (default: the one shipped inside)."
    )
    limits: LimitSettings = Field(default_factory=LimitSettings, description="Request bounds.")

    @field_validator("api_key", mode="before")
    @classmethod
    def _empty_means_none(cls, value: object) -> object:
        """``TOXICITY_CLASSIFIER_API_KEY=`` (set but empty) leaves authentication off instead of requiring an
        empty token."""
        if isinstance(value, SecretStr):
            value = value.get_secret_value()
        return None if isinstance(value, str) and not value.strip() else value
