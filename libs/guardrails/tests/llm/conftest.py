"""Fixtures for LLMRails tests: a GuardrailSystem whose only content check is the library's FakeClassifier."""

from __future__ import annotations

import pytest

from stockade.guardrails import Action
from stockade.guardrails.system import GuardrailSystem
from stockade.guardrails.testing import FakeClassifier, InMemoryRecorder

NO_BUILTIN_CHECKS = {
    "pii": {"enabled": False},
    "exfiltration": {"enabled": False},
    "classification": {"enabled": False},
}


@pytest.fixture
def recorder() -> InMemoryRecorder:
    return InMemoryRecorder()


@pytest.fixture
def classifier() -> FakeClassifier:
    """Blocks 'jailbreak' and 'exploit', masks 'secret', warns on 'sloppy'."""
    return FakeClassifier(
        "fake",
        {
            "jailbreak": ("jailbreak", Action.BLOCK),
            "exploit": ("malicious", Action.BLOCK),
            "secret": ("secret", Action.MASK),
            "sloppy": ("style", Action.WARN),
        },
    )


@pytest.fixture
def system(recorder: InMemoryRecorder, classifier: FakeClassifier) -> GuardrailSystem:
    s = GuardrailSystem({"guardrails": {"checks": NO_BUILTIN_CHECKS}}, recorder=recorder)
    s.add_check(classifier)
    return s
