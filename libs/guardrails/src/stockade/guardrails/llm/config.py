"""Model configuration for LLMRails: provider family, model, endpoint, where the key comes from, prices.

Secrets never live in configuration: a provider key is read from an environment variable (``api_key_env``) or
from a secrets file (``api_key_file``), only when a provider client is built, and is never part of a repr, a
log line, an event or an error message.
"""

from __future__ import annotations

import os
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from stockade.guardrails.errors import ConfigError

Provider = Literal["openai", "azure_openai", "anthropic", "gemini", "bedrock"]

DEFAULT_KEY_ENV: dict[str, str | None] = {
    "openai": "OPENAI_API_KEY",
    "azure_openai": "AZURE_OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "bedrock": None,  # boto3's own credential chain (AWS_ACCESS_KEY_ID, profiles, instance roles)
}
_SECRET_KEYS = ("api_key", "apikey", "key", "secret", "token", "password", "aws_secret_access_key")


class ModelConfig(BaseModel):
    """One model LLMRails can call."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(default=None, description="Name to select this model by; defaults to `model`.")
    provider: Provider = Field(description="openai, azure_openai, anthropic, gemini or bedrock.")
    model: str = Field(
        min_length=1,
        description="Model name; the deployment name for azure_openai, the model id for bedrock.",
    )
    base_url: str | None = Field(
        default=None,
        description="Endpoint override: OpenAI/Anthropic/Gemini base URL, the Azure resource endpoint, or the "
        "bedrock-runtime endpoint URL.",
    )
    api_key_env: str | None = Field(
        default=None,
        description="Environment variable holding the key; defaults per provider (OPENAI_API_KEY...).",
    )
    api_key_file: Path | None = Field(
        default=None, description="File whose content is the key (a mounted secret)."
    )
    api_version: str | None = Field(
        default=None, description="Azure OpenAI API version (required for azure)."
    )
    region: str | None = Field(default=None, description="AWS region for bedrock (else AWS_REGION).")
    timeout_seconds: float = Field(default=60.0, gt=0, description="Per-call timeout.")
    max_retries: int = Field(default=2, ge=0, description="SDK retries on transient errors.")
    max_output_tokens: int = Field(
        default=1024, gt=0, description="Output token cap when a request sets none."
    )
    context_window: int | None = Field(default=None, gt=0, description="Context size in tokens, when known.")
    input_price_per_mtok: Decimal | None = Field(
        default=None, ge=0, description="Price per million input tokens (for the cost estimate)."
    )
    output_price_per_mtok: Decimal | None = Field(
        default=None, ge=0, description="Price per million output tokens (for the cost estimate)."
    )

    @model_validator(mode="before")
    @classmethod
    def _no_inline_secrets(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for key in data:
                if str(key).lower() in _SECRET_KEYS:
                    raise ValueError(
                        f"'{key}' is not accepted: provider keys come only from the environment "
                        "(api_key_env) or a secrets file (api_key_file)"
                    )
        return data

    @model_validator(mode="after")
    def _provider_requirements(self) -> ModelConfig:
        if self.provider == "azure_openai" and (not self.base_url or not self.api_version):
            raise ValueError("azure_openai needs base_url (the resource endpoint) and api_version")
        return self

    @property
    def display_name(self) -> str:
        return self.name or self.model

    def key_env_name(self) -> str | None:
        return self.api_key_env or DEFAULT_KEY_ENV[self.provider]

    def resolve_api_key(self) -> SecretStr | None:
        """The key from ``api_key_file`` or the environment; None for bedrock without either.

        Raises :class:`ConfigError` naming the variable or file (never the value) when it is required but missing.
        """
        if self.api_key_file is not None:
            try:
                value = self.api_key_file.read_text(encoding="utf-8").strip()
            except OSError as exc:
                raise ConfigError(f"api_key_file {self.api_key_file}: cannot read ({exc.strerror})") from None
            if not value:
                raise ConfigError(f"api_key_file {self.api_key_file} is empty")
            return SecretStr(value)
        env = self.key_env_name()
        if env is None:
            return None
        value = os.environ.get(env, "").strip()
        if not value:
            raise ConfigError(f"model {self.display_name!r}: environment variable {env} is not set")
        return SecretStr(value)
