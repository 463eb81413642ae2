"""The one exception hierarchy of ``stockade.guardrails``.

Guardrail *decisions* are values (:class:`~stockade.guardrails.verdict.Verdict`); exceptions are for bugs,
infrastructure failures, bad configuration and the spec's named errors.
"""

from __future__ import annotations


class GuardrailError(Exception):
    """Base class of every exception raised by stockade.guardrails."""


class ConfigError(GuardrailError, ValueError):
    """Configuration failed validation; the message names the bad key."""


class MissingExtraError(GuardrailError, ImportError):
    """A check needs an optional extra that is not installed; the message names the extra."""

    def __init__(self, feature: str, extra: str, missing: str) -> None:
        self.feature, self.extra, self.missing = feature, extra, missing
        super().__init__(
            f"{feature} needs the '{extra}' extra ({missing} is not installed): "
            f"pip install 'stockade-guardrails[{extra}]'"
        )


class CheckUnavailableError(GuardrailError):
    """A check could not run (remote service down, timeout, circuit open)."""


class AttestationError(GuardrailError):
    """An attested message failed verification (spec 4.4, layer B) in a way that must not be ignored."""


class PrivilegeError(GuardrailError):
    """A privileged capability was requested without the required trust tier (spec 4.4, layer C)."""


class BudgetExceededError(GuardrailError):
    """Raised only by APIs that promise to raise instead of returning a blocking Verdict."""


__all__ = [
    "AttestationError",
    "BudgetExceededError",
    "CheckUnavailableError",
    "ConfigError",
    "GuardrailError",
    "MissingExtraError",
    "PrivilegeError",
]
