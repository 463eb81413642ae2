"""AttestationResult (spec 2): the value verify_message() and the single-layer operations return."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from stockade.guardrails.errors import AttestationError, PrivilegeError
from stockade.guardrails.trust.registry import AgentIdentity
from stockade.guardrails.verdict import Verdict


class Layer(StrEnum):
    """The layer of verify_message() that decided (spec 4.4)."""

    A = "A"  # registry identity and trust floor
    B = "B"  # attestation
    C = "C"  # privilege isolation
    D = "D"  # independent content re-validation


class RejectionReason(StrEnum):
    """Machine-readable reason of a failed result; the stable part of every rejection."""

    UNKNOWN_SENDER = "unknown_sender"
    TRUST_TOO_LOW = "trust_too_low"
    CAPABILITY_NOT_ALLOWED = "capability_not_allowed"
    MALFORMED = "malformed"
    WRONG_RECEIVER = "wrong_receiver"
    UNKNOWN_KEY = "unknown_key"
    BAD_SIGNATURE = "bad_signature"
    PAYLOAD_MISMATCH = "payload_mismatch"
    STALE = "stale"
    FUTURE = "future"
    REPLAY = "replay"
    PRIVILEGE_REQUIRED = "privilege_required"
    CAPABILITY_REQUIRED = "capability_required"
    CONTENT_REJECTED = "content_rejected"


class AttestationResult(BaseModel):
    """``passed`` and ``error`` (spec 2), plus which layer decided, a stable reason code and the sender."""

    model_config = ConfigDict(frozen=True)

    passed: bool
    error: str | None = Field(default=None, description="Human-readable reason when not passed.")
    reason: RejectionReason | None = Field(default=None, description="Stable reason code when not passed.")
    layer: Layer | None = Field(default=None, description="Layer that rejected.")
    sender: AgentIdentity | None = Field(default=None, description="Registry entry of the verified sender.")
    capability: str | None = Field(default=None, description="Capability the message used, when any.")
    verdict: Verdict | None = Field(default=None, description="Layer D verdict, when a validator ran.")

    @classmethod
    def ok(
        cls, sender: AgentIdentity | None, capability: str | None = None, verdict: Verdict | None = None
    ) -> AttestationResult:
        # Built from already-validated parts on the hot path: skip re-validation.
        return cls.model_construct(
            passed=True,
            error=None,
            reason=None,
            layer=None,
            sender=sender,
            capability=capability,
            verdict=verdict,
        )

    @classmethod
    def fail(
        cls,
        layer: Layer,
        reason: RejectionReason,
        error: str,
        *,
        sender: AgentIdentity | None = None,
        capability: str | None = None,
        verdict: Verdict | None = None,
    ) -> AttestationResult:
        return cls.model_construct(
            passed=False,
            error=error,
            reason=reason,
            layer=layer,
            sender=sender,
            capability=capability,
            verdict=verdict,
        )

    def raise_for_failure(self) -> AttestationResult:
        """Return self when passed; raise PrivilegeError for layer C, AttestationError for A, B and D."""
        if self.passed:
            return self
        message = f"layer {self.layer}: {self.reason}: {self.error}"
        if self.layer is Layer.C:
            raise PrivilegeError(message)
        raise AttestationError(message)
