"""The agent-trust boundary (spec 4.4): registry, attestation, privilege isolation, content re-validation.

Importing this package needs no optional extra; JetStreamNonceStore (``nats`` extra) is imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stockade.guardrails.trust.attestation import AttestationVerifier, payload_digest
from stockade.guardrails.trust.canonical import canonical_json
from stockade.guardrails.trust.config import AgentConfig, AgentKeyConfig, AttestationConfig, TrustConfig
from stockade.guardrails.trust.content import ContentValidator, content_validator_from_guardrail_system
from stockade.guardrails.trust.enforcer import AgentTrustEnforcer
from stockade.guardrails.trust.envelope import AttestationEnvelope
from stockade.guardrails.trust.hook import AgentTrustHook, SignedMessage
from stockade.guardrails.trust.keys import KeyRing
from stockade.guardrails.trust.levels import TrustLevel
from stockade.guardrails.trust.loading import (
    trust_config_from_dict,
    trust_config_from_path,
    trust_config_from_yaml,
)
from stockade.guardrails.trust.nonces import InMemoryNonceStore, NonceStore
from stockade.guardrails.trust.policy import GuardrailPolicy
from stockade.guardrails.trust.registry import AgentIdentity, AgentRegistry
from stockade.guardrails.trust.result import AttestationResult, Layer, RejectionReason

if TYPE_CHECKING:
    from stockade.guardrails.trust.nonces_nats import JetStreamNonceStore


def __getattr__(name: str) -> Any:
    if name == "JetStreamNonceStore":
        from stockade.guardrails.trust.nonces_nats import JetStreamNonceStore

        return JetStreamNonceStore
    raise AttributeError(name)


__all__ = [
    "AgentConfig",
    "AgentIdentity",
    "AgentKeyConfig",
    "AgentRegistry",
    "AgentTrustEnforcer",
    "AgentTrustHook",
    "AttestationConfig",
    "AttestationEnvelope",
    "AttestationResult",
    "AttestationVerifier",
    "ContentValidator",
    "GuardrailPolicy",
    "InMemoryNonceStore",
    "JetStreamNonceStore",
    "KeyRing",
    "Layer",
    "NonceStore",
    "RejectionReason",
    "SignedMessage",
    "TrustConfig",
    "TrustLevel",
    "canonical_json",
    "content_validator_from_guardrail_system",
    "payload_digest",
    "trust_config_from_dict",
    "trust_config_from_path",
    "trust_config_from_yaml",
]
