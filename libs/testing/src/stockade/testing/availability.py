"""What happens when a real server is missing: skip locally, fail under CI=true."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

__all__ = ["ci_enabled", "server_unavailable"]

_TRUE = {"1", "true", "yes", "on"}


def ci_enabled() -> bool:
    """True when the ``CI`` environment variable is set to a true value (``CI=true`` on CI machines)."""
    return os.environ.get("CI", "").strip().lower() in _TRUE


def server_unavailable(server: str, reason: str) -> NoReturn:
    """Skip the test for lack of ``server``; with ``CI=true`` fail it with the same reason instead.

    ``reason`` should say how to get the server (an env URL to set or what to install).
    """
    message = f"{server} not available: {reason}"
    if ci_enabled():
        pytest.fail(f"{message} (CI=true: a missing server is a failure, not a skip)", pytrace=False)
    pytest.skip(message)
