"""The trust-broker's business rule, free of NATS: one submission in, one Decision out.

A Decision says what to publish: the verified payload to the receiver's inbox, or a ``trust.rejected.v1`` event
with the reason; and what to answer on the sender's reply subject, if it gave one.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from stockade.contracts import TrustRejected, subjects
from stockade.contracts.replies import SubmitReply
from stockade.guardrails.errors import AttestationError
from stockade.guardrails.trust import AgentRegistry, AttestationEnvelope, AttestationResult
from stockade.trust_broker import wire
from stockade.trust_broker.reloading import EnforcerProvider

log = logging.getLogger(__name__)

UNAVAILABLE = "verification_unavailable"

_UNAUTHENTICATED = frozenset({"bad_signature", "unknown_key", "malformed"})
"""Rejections of an envelope not proven to come from the sender it names."""


@dataclass(frozen=True)
class Delivery:
    subject: str
    headers: dict[str, str]
    body: bytes


@dataclass(frozen=True)
class Decision:
    delivery: Delivery | None
    rejection: TrustRejected | None
    reply: SubmitReply

    @property
    def delivered(self) -> bool:
        return self.delivery is not None


class TrustBrokerService:
    """Verifies a submission with the current AgentTrustEnforcer and decides where it goes."""

    def __init__(self, enforcers: EnforcerProvider) -> None:
        self.enforcers = enforcers

    async def handle(self, subject: str, headers: Mapping[str, str] | None, body: bytes) -> Decision:
        raw = (headers or {}).get(wire.ATTESTATION, "")
        claimed = AttestationEnvelope.parse(raw) if raw else None
        try:
            receiver = subjects.receiver_of_submit(subject)
        except ValueError as exc:  # a subject token that is not an agent id
            return self._reject(subject.rsplit(".", 1)[-1], claimed, "malformed", "B", str(exc))
        try:
            envelope = claimed if claimed is not None else raw  # parse once
            result = await self.enforcers.current.verify_message(envelope, body, expected_receiver=receiver)
        except AttestationError as exc:
            # Fail closed: the message is not delivered when its replay status cannot be established.
            log.error("verification unavailable for a message to %s: %s", receiver, exc)
            return self._reject(receiver, claimed, UNAVAILABLE, None, str(exc))
        if not result.passed:
            return self._reject(
                receiver,
                claimed,
                str(result.reason),
                str(result.layer) if result.layer else None,
                result.error,
            )
        assert claimed is not None  # a passed result implies a well-formed envelope
        return Decision(
            delivery=Delivery(subjects.agent_inbox(receiver), _delivery_headers(claimed, result), body),
            rejection=None,
            reply=SubmitReply(status="delivered", receiver=receiver, nonce=claimed.nonce),
        )

    def _project_of(self, receiver: str, sender: str | None) -> str | None:
        """The audit trail's project for a rejection: the registered receiver's, else the registered claimed
        sender's (a forged sender still names a real agent, whose team should see the attempt), else None."""
        registry = self.enforcers.current.registry
        return _registered_project(registry, receiver) or _registered_project(registry, sender)

    def _reject(
        self,
        receiver: str,
        envelope: AttestationEnvelope | None,
        reason: str,
        layer: str | None,
        error: str | None,
    ) -> Decision:
        sender = envelope.sender if envelope else None
        # An envelope whose signature did not verify names a sender anyone can claim: its rejection is filed
        # under the receiver's project only, never the claimed sender's (review L2: no forged audit records).
        verified = reason not in _UNAUTHENTICATED
        event = TrustRejected(
            sender=sender,
            receiver=receiver,
            reason=reason,
            layer=layer,
            correlation_id=envelope.nonce if envelope else None,
            project_id=self._project_of(receiver, sender if verified else None),
        )
        details = {"error": error} if error else {}  # absent from the reply when there is none
        reply = SubmitReply(status="rejected", receiver=receiver, reason=reason, layer=layer, **details)
        return Decision(delivery=None, rejection=event, reply=reply)


def _registered_project(registry: AgentRegistry, agent_id: str | None) -> str | None:
    agent = registry.get(agent_id) if agent_id else None
    return agent.project if agent is not None else None


def _delivery_headers(envelope: AttestationEnvelope, result: AttestationResult) -> dict[str, str]:
    assert result.sender is not None
    headers = {
        wire.SENDER: result.sender.agent_id,
        wire.SENDER_TRUST: str(result.sender.trust_level),
        wire.NONCE: envelope.nonce,
        wire.KEY_ID: envelope.key_id,
    }
    if result.capability:
        headers[wire.CAPABILITY] = result.capability
    return headers
