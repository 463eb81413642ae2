"""Load the ``guardrails.trust`` section from YAML, accepting a full guardrails file or the bare section."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from stockade.guardrails.config_files import describe_problems, read_config_text, yaml_mapping
from stockade.guardrails.errors import ConfigError
from stockade.guardrails.trust.config import TrustConfig


def trust_config_from_dict(data: dict[str, Any] | None) -> TrustConfig:
    """``data`` is either ``{"guardrails": {"trust": {...}}}`` or the trust section itself."""
    data = data or {}
    prefix = "guardrails.trust"
    section: Any = data
    if "guardrails" in data:
        section = (data.get("guardrails") or {}).get("trust") or {}
    if not isinstance(section, dict):
        raise ConfigError(f"{prefix}: must be a mapping")
    try:
        return TrustConfig.model_validate(section)
    except ValidationError as exc:
        raise ConfigError("invalid trust configuration: " + describe_problems(exc, prefix)) from None


def trust_config_from_yaml(text: str) -> TrustConfig:
    return trust_config_from_dict(yaml_mapping(text, "trust configuration"))


def trust_config_from_path(path: str | Path) -> TrustConfig:
    return trust_config_from_yaml(read_config_text(Path(path), "trust configuration"))
