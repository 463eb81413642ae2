"""Root configuration: nested pydantic models, loadable from a YAML file, a YAML string, or code.

Every field has a default and a description; loading validates and raises :class:`ConfigError` naming the
bad key (dotted path, e.g. ``guardrails.policies.token_budget.per_request``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from stockade.guardrails.checks.config import ContentChecksConfig
from stockade.guardrails.config_files import describe_problems, read_config_text, yaml_mapping
from stockade.guardrails.errors import ConfigError
from stockade.guardrails.llm.config import ModelConfig
from stockade.guardrails.policies.config import PoliciesConfig
from stockade.guardrails.storage.config import StorageConfig
from stockade.guardrails.trust.config import TrustConfig


class GuardrailsSection(BaseModel):
    """The ``guardrails:`` section."""

    model_config = ConfigDict(extra="forbid")

    checks: ContentChecksConfig = Field(default_factory=ContentChecksConfig, description="Content checks.")
    policies: PoliciesConfig = Field(
        default_factory=PoliciesConfig, description="Budgets, tools, rate limits."
    )
    storage: StorageConfig = Field(default_factory=StorageConfig, description="Run-data storage.")
    trust: TrustConfig = Field(default_factory=TrustConfig, description="Agent-trust boundary.")


class GuardrailsConfig(BaseModel):
    """Root of a Stockade guardrails configuration."""

    model_config = ConfigDict(extra="forbid")

    models: list[ModelConfig] = Field(default_factory=list, description="Models LLMRails may call.")
    guardrails: GuardrailsSection = Field(
        default_factory=GuardrailsSection, description="Rails and policies."
    )

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Self:
        try:
            return cls.model_validate(data or {})
        except ValidationError as exc:
            raise ConfigError("invalid guardrails configuration: " + describe_problems(exc)) from None

    @classmethod
    def from_yaml(cls, text: str) -> Self:
        return cls.from_dict(yaml_mapping(text, "configuration"))

    @classmethod
    def from_path(cls, path: str | Path) -> Self:
        return cls.from_yaml(read_config_text(Path(path), "configuration"))


def load_config(source: str | Path | dict[str, Any] | GuardrailsConfig | None = None) -> GuardrailsConfig:
    """Load from a config object, a dict, a path to a YAML file, or a YAML string."""
    if source is None:
        return GuardrailsConfig()
    if isinstance(source, GuardrailsConfig):
        return source
    if isinstance(source, dict):
        return GuardrailsConfig.from_dict(source)
    if isinstance(source, Path):
        return GuardrailsConfig.from_path(source)
    if "\n" not in source and source.endswith((".yml", ".yaml")):
        return GuardrailsConfig.from_path(source)
    return GuardrailsConfig.from_yaml(source)
