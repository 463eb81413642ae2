"""AttestationVerifier (spec 4.4, layer B): HMAC-SHA256 signing and verification of agent messages.

Verification order (the first failure decides): key lookup (``unknown_key``), constant-time signature check
(``bad_signature``), payload-hash integrity (``payload_mismatch``), receiver binding (``wrong_receiver``),
freshness (``stale`` older than window + skew, ``future`` more than skew ahead), nonce replay (``replay``).
The nonce is claimed last, so only an otherwise valid message consumes it.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Callable

from stockade.guardrails.errors import AttestationError
from stockade.guardrails.trust.config import AttestationConfig
from stockade.guardrails.trust.envelope import AttestationEnvelope, signing_input
from stockade.guardrails.trust.keys import KeyRing
from stockade.guardrails.trust.nonces import InMemoryNonceStore, NonceStore
from stockade.guardrails.trust.result import AttestationResult, Layer, RejectionReason

NONCE_BYTES = 16  # 128 bits


def payload_bytes(payload: bytes | str) -> bytes:
    return payload.encode("utf-8") if isinstance(payload, str) else payload


def payload_digest(payload: bytes | str) -> str:
    return hashlib.sha256(payload_bytes(payload)).hexdigest()


def _fail(reason: RejectionReason, error: str) -> AttestationResult:
    return AttestationResult.fail(Layer.B, reason, error)


class AttestationVerifier:
    """Signs with and verifies against a :class:`KeyRing`; remembers nonces in a :class:`NonceStore`."""

    def __init__(
        self,
        keys: KeyRing,
        nonce_store: NonceStore | None = None,
        *,
        config: AttestationConfig | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.keys = keys
        self.config = config or AttestationConfig()
        self.nonce_store: NonceStore = InMemoryNonceStore(clock=clock) if nonce_store is None else nonce_store
        self._clock = clock

    def sign(
        self,
        sender: str,
        receiver: str,
        payload: bytes | str,
        *,
        capability: str | None = None,
        key_id: str | None = None,
    ) -> AttestationEnvelope:
        """Attest ``payload`` from ``sender`` to ``receiver`` with the sender's signing key (or ``key_id``)."""
        kid = key_id or self.keys.signing_key_id(sender)
        mac = self.keys.mac(sender, kid) if kid else None
        if kid is None or mac is None:
            raise AttestationError(f"no signing key {kid!r} for agent {sender!r}")
        digest, nonce, timestamp_ms = (
            payload_digest(payload),
            secrets.token_hex(NONCE_BYTES),
            int(self._clock() * 1000),
        )
        mac.update(
            signing_input(
                sender=sender,
                receiver=receiver,
                key_id=kid,
                payload_sha256=digest,
                nonce=nonce,
                timestamp_ms=timestamp_ms,
                capability=capability,
            )
        )
        return AttestationEnvelope.model_validate(
            {
                "sender": sender,
                "receiver": receiver,
                "key_id": kid,
                "payload_sha256": digest,
                "nonce": nonce,
                "timestamp_ms": timestamp_ms,
                "capability": capability,
                "signature": mac.hexdigest(),
            }
        )

    async def verify(
        self, envelope: AttestationEnvelope, payload: bytes | str, *, expected_receiver: str | None = None
    ) -> AttestationResult:
        """Layer B alone. Returns a result; raises AttestationError only if the nonce store cannot answer."""
        failed = await self.check(envelope, payload, expected_receiver=expected_receiver)
        return failed or AttestationResult.ok(None, capability=envelope.capability)

    async def check(
        self, envelope: AttestationEnvelope, payload: bytes | str, *, expected_receiver: str | None = None
    ) -> AttestationResult | None:
        """Layer B alone: the failed result, or None when the envelope passes (no result object is built)."""
        mac = self.keys.mac(envelope.sender, envelope.key_id)
        if mac is None:
            return _fail(
                RejectionReason.UNKNOWN_KEY,
                f"agent {envelope.sender!r} has no active key {envelope.key_id!r}",
            )
        mac.update(envelope.signing_input())
        if not hmac.compare_digest(mac.hexdigest(), envelope.signature):
            return _fail(RejectionReason.BAD_SIGNATURE, "signature does not match")
        if not hmac.compare_digest(payload_digest(payload), envelope.payload_sha256):
            return _fail(RejectionReason.PAYLOAD_MISMATCH, "payload does not match its signed SHA-256")
        if expected_receiver is not None and envelope.receiver != expected_receiver:
            return _fail(
                RejectionReason.WRONG_RECEIVER,
                f"envelope is addressed to {envelope.receiver!r}, not {expected_receiver!r}",
            )
        now = self._clock()
        sent = envelope.timestamp_ms / 1000
        window, skew = self.config.freshness_window_s, self.config.clock_skew_s
        if now - sent > window + skew:
            return _fail(
                RejectionReason.STALE,
                f"message is {now - sent:.1f} s old (window {window} s + skew {skew} s)",
            )
        if sent - now > skew:
            return _fail(RejectionReason.FUTURE, f"message is dated {sent - now:.1f} s ahead (skew {skew} s)")
        if not await self.nonce_store.claim(f"{envelope.sender}.{envelope.nonce}", sent + window + skew):
            return _fail(RejectionReason.REPLAY, "nonce was already used")
        return None
