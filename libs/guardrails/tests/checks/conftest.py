"""Shared fixtures of the content-check tests. Models load once per test session."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    # Until the stockade.testing plugin registers the project markers (CONTRIBUTING.md), register ours.
    for marker in ("ml: needs torch/transformers/presidio models", "slow: slower than a second"):
        config.addinivalue_line("markers", marker)
