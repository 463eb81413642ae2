"""Layers A and C of the agent-trust boundary: decisions over the policy and the registry alone.

Each returns the failed :class:`AttestationResult` or None when the layer lets the message through; none does
I/O. :class:`~stockade.guardrails.trust.enforcer.AgentTrustEnforcer` runs them around layers B and D.
"""

from __future__ import annotations

from stockade.guardrails.trust.levels import TrustLevel
from stockade.guardrails.trust.policy import GuardrailPolicy
from stockade.guardrails.trust.registry import AgentIdentity, AgentRegistry
from stockade.guardrails.trust.result import AttestationResult, Layer
from stockade.guardrails.trust.result import RejectionReason as R


def identity(
    policy: GuardrailPolicy,
    sender: AgentIdentity | None,
    claimed: str,
    capability: str | None,
    required_trust: TrustLevel | None,
) -> AttestationResult | None:
    """Layer A: the sender is registered, at or above the trust floor, and allow-listed for the capability."""
    if sender is None:
        return AttestationResult.fail(Layer.A, R.UNKNOWN_SENDER, f"agent {claimed!r} is not registered")
    floor = policy.min_sender_trust
    if required_trust is not None and required_trust.rank > floor.rank:
        floor = required_trust
    if not sender.trust_level.at_least(floor):
        return AttestationResult.fail(
            Layer.A,
            R.TRUST_TOO_LOW,
            f"agent {claimed!r} is {sender.trust_level}, the floor is {floor}",
            sender=sender,
            capability=capability,
        )
    if capability and policy.require_allowlisted_capability and not sender.allows(capability):
        return AttestationResult.fail(
            Layer.A,
            R.CAPABILITY_NOT_ALLOWED,
            f"capability {capability!r} is not on agent {claimed!r}'s allow-list",
            sender=sender,
            capability=capability,
        )
    return None


def receiver_requires_capability(policy: GuardrailPolicy, target: AgentIdentity | None) -> bool:
    """The receiver's own setting; unset (None): required when it holds a privileged capability (review M7)."""
    if target is None:
        return False
    if target.require_capability is not None:
        return target.require_capability
    return bool(target.capabilities & policy.privileged_capabilities)


def capability_named(
    policy: GuardrailPolicy,
    registry: AgentRegistry,
    sender: AgentIdentity,
    capability: str | None,
    receiver: str,
) -> AttestationResult | None:
    """Layer C: without a capability the privilege check has nothing to judge, so a receiver that requires
    one (policy ``require_capability``, or the receiver's registry entry; by default every receiver holding a
    privileged capability) refuses the message."""
    if capability is not None:
        return None
    if not (policy.require_capability or receiver_requires_capability(policy, registry.get(receiver))):
        return None
    return AttestationResult.fail(
        Layer.C,
        R.CAPABILITY_REQUIRED,
        f"messages to {receiver!r} must name a capability; agent {sender.agent_id!r} named none",
        sender=sender,
    )


def privilege(
    policy: GuardrailPolicy, sender: AgentIdentity, capability: str | None
) -> AttestationResult | None:
    """Layer C: a privileged capability needs the policy's privileged trust tier."""
    if policy.is_privileged(capability) and not sender.trust_level.at_least(policy.privileged_trust):
        return AttestationResult.fail(
            Layer.C,
            R.PRIVILEGE_REQUIRED,
            f"capability {capability!r} is privileged and needs trust {policy.privileged_trust}; "
            f"agent {sender.agent_id!r} is {sender.trust_level}",
            sender=sender,
            capability=capability,
        )
    return None
