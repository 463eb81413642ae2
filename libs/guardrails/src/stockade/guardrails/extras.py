"""Import optional dependencies with an error that names the extra to install."""

from __future__ import annotations

import importlib
from types import ModuleType

from stockade.guardrails.errors import MissingExtraError


def require(module: str, *, extra: str, feature: str) -> ModuleType:
    """Import ``module`` or raise :class:`MissingExtraError` naming ``extra``."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(feature, extra, module) from exc
