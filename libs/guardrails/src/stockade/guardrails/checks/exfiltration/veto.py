"""A veto: one named reason why a candidate is not a secret (a placeholder, an example value, low entropy...).

Vetoes are kept apart from policy: a veto says what a value *is*; the scanner's policy
(:class:`~stockade.guardrails.checks.exfiltration.policy.SecretsPolicy`) says which vetoes a deployment applies.
Each veto that rejects a candidate is counted by name in the scan's report, so a reader can see why a value was
not reported and how often each reason fires.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Veto(Generic[T]):
    """``test(subject)`` is true (truthy: a match object will do) when the subject is not a secret, for the
    reason ``name`` gives."""

    name: str
    reason: str
    test: Callable[[T], object]


def first_veto(vetoes: Iterable[Veto[T]], subject: T) -> Veto[T] | None:
    """The first veto that rejects the subject, or None when none does."""
    return next((veto for veto in vetoes if veto.test(subject)), None)
