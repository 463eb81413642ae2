"""Reading a configuration: the file's text, its YAML mapping and the message naming the bad keys. Shared by
the root configuration (:mod:`~stockade.guardrails.config`) and the trust section's loader
(:mod:`~stockade.guardrails.trust.loading`); ``what`` names the configuration in the messages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from stockade.guardrails.errors import ConfigError


def read_config_text(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {what} file {path}: {exc.strerror}") from None


def yaml_mapping(text: str, what: str) -> dict[str, Any] | None:
    """The top-level mapping of a YAML text; None for an empty text."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{what} is not valid YAML: {exc}") from None
    if data is None:
        return None
    if not isinstance(data, dict):
        raise ConfigError(f"{what} must be a YAML mapping at the top level")
    return data


def describe_problems(exc: ValidationError, *prefix: str) -> str:
    """``key: message; ...`` of a validation error, each key a dotted path below ``prefix``."""
    problems = []
    for err in exc.errors():
        key = ".".join([*prefix, *(str(p) for p in err["loc"])]) or "<root>"
        problems.append(f"{key}: {err['msg']}")
    return "; ".join(problems)
