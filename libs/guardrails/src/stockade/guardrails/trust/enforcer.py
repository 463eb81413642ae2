"""AgentTrustEnforcer (spec 4.4): guards the point where one agent's output becomes another agent's input.

Built from a :class:`GuardrailPolicy` plus an :class:`AgentRegistry` and an :class:`AttestationVerifier` (never
from GuardrailSystem; layer D optionally reuses GuardrailSystem checks through a content validator).

Failure paths, exactly:

* Every rejection of a message or a tool call (layers A, B, C, D, and a malformed envelope) is **returned** as
  ``AttestationResult(passed=False, error=..., reason=..., layer=...)``. Nothing is raised for a rejection.
* With ``raise_on_failure=True`` the same rejections are **raised** instead: layer C as ``PrivilegeError``,
  layers A, B, D and malformed envelopes as ``AttestationError`` (:meth:`AttestationResult.raise_for_failure`).
* ``AttestationError`` is **always raised** (whatever ``raise_on_failure``) when verification cannot be
  completed: the nonce store cannot answer, or the content validator raises. The message is never accepted.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from stockade.guardrails.errors import AttestationError
from stockade.guardrails.events import EventKind, EventRecorder, GuardrailEvent, NullRecorder
from stockade.guardrails.trust import layers
from stockade.guardrails.trust.attestation import AttestationVerifier, payload_bytes
from stockade.guardrails.trust.config import TrustConfig
from stockade.guardrails.trust.content import ContentValidator
from stockade.guardrails.trust.envelope import AttestationEnvelope
from stockade.guardrails.trust.keys import KeyRing
from stockade.guardrails.trust.levels import TrustLevel
from stockade.guardrails.trust.nonces import NonceStore
from stockade.guardrails.trust.policy import GuardrailPolicy
from stockade.guardrails.trust.registry import AgentIdentity, AgentRegistry
from stockade.guardrails.trust.result import AttestationResult, Layer, RejectionReason

_PASSED_CACHE_SIZE = 4096

_UNAUTHENTICATED = frozenset({RejectionReason.UNKNOWN_KEY, RejectionReason.BAD_SIGNATURE})
"""Layer B outcomes meaning 'not signed by a key of the claimed sender': answered alike."""


class AgentTrustEnforcer:
    """Runs layers B (attestation), A (registry), C (privilege isolation), D (content) in that order: the
    signature first, so nothing of the registry answers a sender without a valid key (one generic reason).

    Layers A and C are the policy decisions of :mod:`~stockade.guardrails.trust.layers`."""

    def __init__(
        self,
        policy: GuardrailPolicy,
        registry: AgentRegistry,
        verifier: AttestationVerifier,
        *,
        content_validator: ContentValidator | None = None,
        receiver: str | None = None,
        recorder: EventRecorder | None = None,
    ) -> None:
        self.policy = policy
        self.registry = registry
        self.verifier = verifier
        self.content_validator = content_validator
        self.receiver = receiver
        self._recorder: EventRecorder = NullRecorder() if recorder is None else recorder
        # Passed results are immutable and depend only on (sender, capability): reuse them on the hot path.
        self._passed_cache: dict[tuple[str, str | None], AttestationResult] = {}

    @classmethod
    def from_config(
        cls,
        config: TrustConfig,
        *,
        nonce_store: NonceStore | None = None,
        content_validator: ContentValidator | None = None,
        receiver: str | None = None,
        recorder: EventRecorder | None = None,
        clock: Callable[[], float] = time.time,
        environ: Mapping[str, str] | None = None,
    ) -> AgentTrustEnforcer:
        """Build policy, registry, key ring and verifier from ``guardrails.trust`` (secrets resolved now)."""
        verifier = AttestationVerifier(
            KeyRing.from_config(config, environ=environ),
            nonce_store,
            config=config.attestation,
            clock=clock,
        )
        return cls(
            config.policy,
            AgentRegistry.from_config(config),
            verifier,
            content_validator=content_validator,
            receiver=receiver,
            recorder=recorder,
        )

    def sign(
        self, sender: str, receiver: str, payload: bytes | str, *, capability: str | None = None
    ) -> AttestationEnvelope:
        """Shortcut for ``self.verifier.sign(...)``."""
        return self.verifier.sign(sender, receiver, payload, capability=capability)

    async def verify_message(
        self,
        envelope: AttestationEnvelope | str | bytes,
        payload: bytes | str,
        *,
        required_capability: str | None = None,
        required_trust: TrustLevel | None = None,
        expected_receiver: str | None = None,
        raise_on_failure: bool = False,
    ) -> AttestationResult:
        """Verify one received message; on pass, ``payload`` may be consumed as the receiver's input.

        ``envelope`` may be the model or its JSON. The capability checked by layers A and C is
        ``required_capability`` if given, else the one the sender signed into the envelope; when both are
        given they must be equal. ``required_trust`` raises the policy's trust floor for this call only.
        ``expected_receiver`` (default: the enforcer's ``receiver``) must equal the signed receiver.
        """
        result = await self._verify(envelope, payload, required_capability, required_trust, expected_receiver)
        self._record("verify_message", result)
        return result.raise_for_failure() if raise_on_failure else result

    async def _verify(
        self,
        raw_envelope: AttestationEnvelope | str | bytes,
        payload: bytes | str,
        required_capability: str | None,
        required_trust: TrustLevel | None,
        expected_receiver: str | None,
    ) -> AttestationResult:
        envelope = (
            raw_envelope
            if isinstance(raw_envelope, AttestationEnvelope)
            else AttestationEnvelope.parse(raw_envelope)
        )
        if envelope is None:
            return AttestationResult.fail(
                Layer.B, RejectionReason.MALFORMED, "attestation envelope is missing or malformed"
            )
        capability = required_capability or envelope.capability
        if required_capability and envelope.capability and envelope.capability != required_capability:
            return AttestationResult.fail(
                Layer.A,
                RejectionReason.CAPABILITY_NOT_ALLOWED,
                f"message was signed for capability {envelope.capability!r}, not {required_capability!r}",
                capability=capability,
            )
        # Layer B first: the signature, before anything of the registry is looked at. An unknown sender, a key
        # it does not have and a wrong signature get one answer, so a sender without a valid key learns nothing
        # about the registry or the allow-lists (review L2).
        receiver = expected_receiver or self.receiver
        attested = await self.verifier.check(envelope, payload, expected_receiver=receiver)
        if attested is not None:
            if attested.reason in _UNAUTHENTICATED:
                return AttestationResult.fail(
                    Layer.B, RejectionReason.BAD_SIGNATURE, "the signature does not verify"
                )
            return attested.model_copy(
                update={"sender": self.registry.get(envelope.sender), "capability": capability}
            )
        # Layer A: identity, trust floor, allow-list (of a sender whose signature verified).
        sender = self.registry.get(envelope.sender)
        failed = layers.identity(self.policy, sender, envelope.sender, capability, required_trust)
        if failed is not None or sender is None:
            return failed or AttestationResult.fail(Layer.A, RejectionReason.UNKNOWN_SENDER, "unknown sender")
        # Layer C: privilege isolation (the signed receiver may demand that every message name a capability).
        privilege = layers.capability_named(
            self.policy, self.registry, sender, capability, envelope.receiver
        ) or layers.privilege(self.policy, sender, capability)
        if privilege is not None:
            return privilege
        return await self._revalidate_content(payload, sender, capability)

    async def _revalidate_content(
        self, payload: bytes | str, sender: AgentIdentity | None, capability: str | None
    ) -> AttestationResult:
        """Layer D: the payload's content checked again, independently of what the sender's side decided."""
        if self.content_validator is None:
            return self._passed(sender, capability)
        try:
            text = payload if isinstance(payload, str) else payload_bytes(payload).decode("utf-8")
        except UnicodeDecodeError:
            return AttestationResult.fail(
                Layer.D,
                RejectionReason.CONTENT_REJECTED,
                "payload is not UTF-8 text",
                sender=sender,
                capability=capability,
            )
        try:
            verdict = await self.content_validator(text)
        except Exception as exc:
            raise AttestationError(f"content validator failed: {type(exc).__name__}: {exc}") from exc
        if not verdict.passed:
            return AttestationResult.fail(
                Layer.D,
                RejectionReason.CONTENT_REJECTED,
                verdict.error or f"content re-validation decided {verdict.action}",
                sender=sender,
                capability=capability,
                verdict=verdict,
            )
        return AttestationResult.ok(sender, capability, verdict)

    def _passed(self, sender: AgentIdentity | None, capability: str | None) -> AttestationResult:
        if sender is None:
            return AttestationResult.ok(None, capability)
        key = (sender.agent_id, capability)
        cached = self._passed_cache.get(key)
        if cached is not None and cached.sender is sender:  # a re-registered agent gets a new result
            return cached
        result = AttestationResult.ok(sender, capability)
        if len(self._passed_cache) < _PASSED_CACHE_SIZE:
            self._passed_cache[key] = result
        return result

    def authorize_tool_invocation(
        self, agent_id: str, capability: str, *, raise_on_failure: bool = False
    ) -> AttestationResult:
        """Layer C alone, at a tool-call boundary, whether or not the call came through an attested message.

        An unregistered agent fails (reason ``unknown_sender``, layer C). Allow-listing of ordinary tools is
        the tool-authorization policy's job; this only enforces the trust tier of privileged capabilities.
        """
        agent = self.registry.get(agent_id)
        result = (
            AttestationResult.fail(
                Layer.C, RejectionReason.UNKNOWN_SENDER, f"agent {agent_id!r} is not registered"
            )
            if agent is None
            else layers.privilege(self.policy, agent, capability) or AttestationResult.ok(agent, capability)
        )
        self._record("authorize_tool_invocation", result)
        return result.raise_for_failure() if raise_on_failure else result

    async def revalidate_upstream_output(
        self, payload: bytes | str, *, sender: str | None = None, raise_on_failure: bool = False
    ) -> AttestationResult:
        """Layer D alone, for payloads that came without an attestation envelope.

        Without a wired content validator there is nothing to re-validate with: that is a configuration
        mistake, raised as AttestationError rather than passed silently.
        """
        if self.content_validator is None:
            raise AttestationError("revalidate_upstream_output() needs a content_validator")
        agent = self.registry.get(sender) if sender else None
        result = await self._revalidate_content(payload, agent, None)
        self._record("revalidate_upstream_output", result)
        return result.raise_for_failure() if raise_on_failure else result

    def _record(self, operation: str, result: AttestationResult) -> None:
        if isinstance(self._recorder, NullRecorder):
            return
        self._recorder.record(
            GuardrailEvent(
                kind=EventKind.TRUST,
                name=operation,
                action="allow" if result.passed else "block",
                payload={
                    "layer": result.layer,
                    "reason": result.reason,
                    "sender": result.sender.agent_id if result.sender else None,
                    "capability": result.capability,
                },
            )
        )
