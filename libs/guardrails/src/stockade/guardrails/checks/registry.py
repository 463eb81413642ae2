"""Checks registered by name. Built-in checks are imported only when enabled (their heavy dependencies load
lazily inside them); applications can register their own factories."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

from stockade.guardrails.checks.base import ContentCheck
from stockade.guardrails.checks.config import CheckSettings, ContentChecksConfig
from stockade.guardrails.errors import ConfigError

CheckFactory = Callable[[ContentChecksConfig], ContentCheck]

# name -> module defining ``build(config: ContentChecksConfig) -> ContentCheck``
_BUILTIN: dict[str, str] = {
    "pii": "stockade.guardrails.checks.pii.check",
    "sensitive_data": "stockade.guardrails.checks.sensitive_data.check",
    "toxicity": "stockade.guardrails.checks.toxicity.check",
    "exfiltration": "stockade.guardrails.checks.exfiltration.check",
    "classification": "stockade.guardrails.checks.classification.check",
}
_CUSTOM: dict[str, CheckFactory] = {}


@dataclass
class CheckSlot:
    """A check plus how the system runs it. ``warmed`` turns true once the check's ``warmup()`` (model load,
    if it has one) has run; loading is not counted against the per-run timeout."""

    check: ContentCheck
    timeout_s: float
    fail_closed: bool | None = None
    warmed: bool = False


def register_check(name: str, factory: CheckFactory) -> None:
    """Register a custom check factory under ``name`` (overrides a built-in of the same name)."""
    _CUSTOM[name] = factory


def registered_checks() -> list[str]:
    return sorted(set(_BUILTIN) | set(_CUSTOM))


def build_check(name: str, config: ContentChecksConfig) -> ContentCheck:
    if name in _CUSTOM:
        return _CUSTOM[name](config)
    if name not in _BUILTIN:
        raise ConfigError(
            f"guardrails.checks: unknown check {name!r}; known: {', '.join(registered_checks())}"
        )
    module = importlib.import_module(_BUILTIN[name])
    factory: CheckFactory = module.build
    return factory(config)


def build_enabled(config: ContentChecksConfig) -> list[CheckSlot]:
    """Build every built-in check whose config says ``enabled`` (raises MissingExtraError on a missing extra)."""
    slots = []
    for name in _BUILTIN:
        settings = getattr(config, name)
        assert isinstance(settings, CheckSettings)
        if settings.enabled:
            check = build_check(name, config)
            slots.append(CheckSlot(check, settings.timeout_s, settings.fail_closed))
    return slots
