"""Load the ``guardrails.trust`` section from YAML, accepting a full guardrails file or the bare section."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

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
        problems = []
        for err in exc.errors():
            key = ".".join([prefix, *(str(p) for p in err["loc"])])
            problems.append(f"{key}: {err['msg']}")
        raise ConfigError("invalid trust configuration: " + "; ".join(problems)) from None


def trust_config_from_yaml(text: str) -> TrustConfig:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"trust configuration is not valid YAML: {exc}") from None
    if data is not None and not isinstance(data, dict):
        raise ConfigError("trust configuration must be a YAML mapping at the top level")
    return trust_config_from_dict(data)


def trust_config_from_path(path: str | Path) -> TrustConfig:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read trust configuration file {p}: {exc.strerror}") from None
    return trust_config_from_yaml(text)
