"""The top-level package exports exactly its public API through __all__."""

from __future__ import annotations

import stockade.guardrails as g
import stockade.guardrails.testing as testing


def test_all_matches_public_names() -> None:
    public = {n for n in dir(g) if not n.startswith("_") and not isinstance(getattr(g, n), type(g))}
    assert set(g.__all__) == public - {"annotations"}
    for name in g.__all__:
        assert hasattr(g, name)


def test_content_check_names_are_exported() -> None:
    for name in (
        "GuardrailSystem",
        "ContentCheck",
        "CheckContext",
        "ContentChecksConfig",
        "Stage",
        "register_check",
    ):
        assert name in g.__all__


def test_testing_module_exports_its_doubles() -> None:
    assert set(testing.__all__) >= {"FakeClassifier", "FakeEncoder", "InMemoryRecorder"}
    for name in testing.__all__:
        assert hasattr(testing, name)
