"""GuardrailPolicy: the policy of the agent-trust boundary (spec 2, 4.4). AgentTrustEnforcer is built from it."""

from __future__ import annotations

from typing import Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from stockade.guardrails.trust.levels import TrustLevel


class GuardrailPolicy(BaseModel):
    """What the receiving side demands of a message before its payload becomes the receiver's input."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    min_sender_trust: TrustLevel = Field(
        default=TrustLevel.RESTRICTED,
        description="Layer A trust floor: senders below this standing trust level are rejected.",
    )
    privileged_capabilities: frozenset[str] = Field(
        default_factory=frozenset,
        description="Capabilities that need privileged_trust on top of being allow-listed (layer C).",
    )
    privileged_trust: TrustLevel = Field(
        default=TrustLevel.PRIVILEGED,
        description="Trust tier a sender needs to use a privileged capability (at least 'trusted').",
    )
    require_allowlisted_capability: bool = Field(
        default=True,
        description="Layer A: a message naming a capability is rejected unless the sender's allow-list has it.",
    )
    require_capability: bool = Field(
        default=False,
        description="Layer C: a message that names no capability (neither signed into the envelope nor required "
        "by the receiver's call) is refused, so no message skips the privilege check by omitting it. "
        "Per receiver: the agent setting require_capability.",
    )

    @model_validator(mode="after")
    def _privileged_tier_is_above_allowlisting(self) -> Self:
        if not self.privileged_trust.at_least(TrustLevel.TRUSTED):
            raise ValueError("privileged_trust must be 'trusted' or 'privileged' (higher than allow-listing)")
        return self

    def is_privileged(self, capability: str | None) -> bool:
        return capability is not None and capability in self.privileged_capabilities
