"""Checks registered by name. Built-in checks are imported only when enabled (their heavy dependencies load
lazily inside them). A check from another package is configured under ``guardrails.checks.custom.<name>``,
built by the factory its ``factory`` names (``"package.module:callable"``) or, without one, by a factory the
application registered with :func:`register_check`; either way it must implement ``ContentCheck``."""

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
    """Register the factory of a check that ``guardrails.checks.custom.<name>`` enables (its settings there
    need no ``factory`` then). Built-in names cannot be taken: configure those in their own sections."""
    if name in _BUILTIN:
        raise ConfigError(f"register_check: {name!r} is a built-in check; configure it in its own section")
    _CUSTOM[name] = factory


def registered_checks() -> list[str]:
    return sorted(set(_BUILTIN) | set(_CUSTOM))


def build_check(name: str, config: ContentChecksConfig) -> ContentCheck:
    if name in config.custom:
        return _build_custom(name, _custom_factory(name, config), config)
    if name not in _BUILTIN:
        raise ConfigError(
            f"guardrails.checks: unknown check {name!r}; known: {', '.join(registered_checks())}"
        )
    module = importlib.import_module(_BUILTIN[name])
    factory: CheckFactory = module.build
    return factory(config)


def build_enabled(config: ContentChecksConfig) -> list[CheckSlot]:
    """Build every check whose settings say ``enabled``: the built-in ones (raises MissingExtraError on a
    missing extra), then the ``custom`` ones in the order configured. Custom factories are resolved first, so a
    configuration naming one that cannot load is refused before any model is loaded (milliseconds, not the
    seconds the built-in checks' models take)."""
    factories = {
        name: _custom_factory(name, config) for name, custom in config.custom.items() if custom.enabled
    }
    slots = []
    for name in _BUILTIN:
        settings = getattr(config, name)
        assert isinstance(settings, CheckSettings)
        if settings.enabled:
            check = build_check(name, config)
            slots.append(CheckSlot(check, settings.timeout_s, settings.fail_closed))
    for name, factory in factories.items():
        custom = config.custom[name]
        slots.append(CheckSlot(_build_custom(name, factory, config), custom.timeout_s, custom.fail_closed))
    return slots


def _custom_factory(name: str, config: ContentChecksConfig) -> Callable[[ContentChecksConfig], object]:
    """The callable a custom check's ``factory`` names (or that ``register_check`` registered)."""
    where = f"guardrails.checks.custom.{name}"
    spec = config.custom[name].factory
    factory: Callable[[ContentChecksConfig], object]
    if spec is None:
        if name not in _CUSTOM:
            raise ConfigError(
                f"{where}: no factory; set factory: 'package.module:callable', or call "
                f"register_check({name!r}, factory) before building the system"
            )
        factory = _CUSTOM[name]
    else:
        module_name, _, attr = spec.partition(":")
        try:
            target: object = importlib.import_module(module_name)
            for part in attr.split("."):
                target = getattr(target, part)
        except (ImportError, AttributeError) as exc:
            raise ConfigError(f"{where}.factory: cannot load {spec!r}: {exc}") from None
        if not callable(target):
            raise ConfigError(f"{where}.factory: {spec!r} is not callable")
        factory = target
    return factory


def _build_custom(
    name: str, factory: Callable[[ContentChecksConfig], object], config: ContentChecksConfig
) -> ContentCheck:
    where = f"guardrails.checks.custom.{name}"
    check = factory(config)
    if not isinstance(check, ContentCheck):
        raise ConfigError(
            f"{where}: the factory returned {type(check).__name__}, not a check "
            "(it needs name, stages and async run(text, ctx))"
        )
    if check.name != name:
        raise ConfigError(f"{where}: the check calls itself {check.name!r}; its name must be {name!r}")
    return check
