"""Policy choices of the secrets scanner, kept apart from the vetoes (what a value is): which vetoes a deployment
applies. Built from ``guardrails.checks.exfiltration.secrets`` (``SecretsDetectorConfig``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeVar

from stockade.guardrails.checks.exfiltration.veto import Veto

T = TypeVar("T")


@dataclass(frozen=True)
class SecretsPolicy:
    """``report_weak_passwords``: a password made of the words written where a password goes, with digits or
    symbols (``password = "password123"``, ``postgres://app:admin2024@db``), is reported. On by default: in an
    agent's output such a value is most often a user's real (weak) password from a config file. Off, it is taken
    for a documentation stand-in, as CredSweeper's model does."""

    report_weak_passwords: bool = True

    @property
    def waived(self) -> frozenset[str]:
        """The names of the vetoes this policy does not apply."""
        return frozenset({"weak_password"} if self.report_weak_passwords else ())

    def applied(self, vetoes: Iterable[Veto[T]]) -> tuple[Veto[T], ...]:
        return tuple(v for v in vetoes if v.name not in self.waived)
