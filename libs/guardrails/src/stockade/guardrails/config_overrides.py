"""Overrides merged into a configuration before validation (``GuardrailSystem(config, **overrides)``): a check
name, a ``guardrails`` section name, or a root key."""

from __future__ import annotations

from typing import Any

from stockade.guardrails.config import GuardrailsConfig

_SECTIONS = {"checks", "policies", "storage", "trust"}


def apply_overrides(cfg: GuardrailsConfig, overrides: dict[str, Any]) -> GuardrailsConfig:
    data = cfg.model_dump(mode="json", exclude_unset=True)
    checks_fields = set(type(cfg.guardrails.checks).model_fields)
    for key, value in overrides.items():
        if key in checks_fields:
            target = data.setdefault("guardrails", {}).setdefault("checks", {})
        elif key in _SECTIONS:
            target = data.setdefault("guardrails", {})
        else:
            target = data
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            target[key] = deep_merge(target[key], value)
        else:
            target[key] = value
    return GuardrailsConfig.from_dict(data)


def deep_merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in extra.items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out
