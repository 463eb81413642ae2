"""Agent-trust configuration (``guardrails.trust``): agents, their keys, the policy and attestation limits.

Example::

    guardrails:
      trust:
        policy:
          min_sender_trust: restricted
          privileged_capabilities: [payments.transfer]
        attestation: {freshness_window_s: 60, clock_skew_s: 5}
        agents:
          - id: planner
            trust: trusted
            capabilities: [search, summarize]
            keys:
              - {id: "2026-11", secret_env: PLANNER_KEY_2026_11}
              - {id: "2026-10", secret_file: /run/secrets/planner-2026-10}

Secrets are never stored in plain ``str`` fields: inline secrets are ``SecretStr`` and everything else names
where the secret lives (an environment variable or a file), resolved by :class:`~.keys.KeyRing`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from stockade.guardrails.trust.levels import TrustLevel
from stockade.guardrails.trust.policy import GuardrailPolicy

AGENT_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
"""Agent ids are single NATS subject tokens and JetStream KV key parts."""
KEY_ID_PATTERN = r"^[A-Za-z0-9_.:-]{1,64}$"


class AgentKeyConfig(BaseModel):
    """One HMAC key of an agent. Exactly one of ``secret``, ``secret_env``, ``secret_file``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=KEY_ID_PATTERN, description="Key id carried in envelopes (rotation).")
    secret: SecretStr | None = Field(default=None, description="Inline secret (avoid outside tests).")
    secret_env: str | None = Field(default=None, description="Environment variable holding the secret.")
    secret_file: Path | None = Field(
        default=None, description="File holding the secret (trailing newline cut)."
    )

    @model_validator(mode="after")
    def _exactly_one_source(self) -> Self:
        sources = [s for s in (self.secret, self.secret_env, self.secret_file) if s is not None]
        if len(sources) != 1:
            raise ValueError("give exactly one of secret, secret_env, secret_file")
        return self


class AgentConfig(BaseModel):
    """An agent of the registry: identity, standing trust level, capability allow-list and keys."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=AGENT_ID_PATTERN, description="Agent identity (one subject token).")
    trust: TrustLevel = Field(default=TrustLevel.UNTRUSTED, description="Standing trust level.")
    capabilities: frozenset[str] = Field(default_factory=frozenset, description="Capability allow-list.")
    keys: tuple[AgentKeyConfig, ...] = Field(
        default=(), description="Active HMAC keys (several for rotation)."
    )
    signing_key: str | None = Field(default=None, description="Key id used by sign(); default the first key.")
    require_capability: bool | None = Field(
        default=None,
        description="As a receiver: every message to this agent must name a capability (layer C refuses one "
        "without; the policy's require_capability does the same for every receiver). None (the default): "
        "required when the agent holds a privileged capability (policy.privileged_capabilities), so no message "
        "reaches a privileged receiver without naming what it asks for; false turns that off explicitly.",
    )
    project: str | None = Field(
        default=None,
        min_length=1,
        max_length=128,
        description="The project this agent works for: the trust-broker files a rejected message to the agent "
        "(or from it, when the receiver names none) under this project in the audit trail.",
    )

    @model_validator(mode="after")
    def _keys_are_consistent(self) -> Self:
        ids = [k.id for k in self.keys]
        if len(ids) != len(set(ids)):
            raise ValueError(f"duplicate key id in agent {self.id!r}")
        if self.signing_key is not None and self.signing_key not in ids:
            raise ValueError(f"signing_key {self.signing_key!r} is not one of the agent's keys")
        return self


class AttestationConfig(BaseModel):
    """Layer B limits (spec 8)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    freshness_window_s: float = Field(
        default=60.0, gt=0, le=3600, description="Maximum age of a message (seconds) before it is stale."
    )
    clock_skew_s: float = Field(
        default=5.0,
        ge=0,
        le=300,
        description="Allowed clock difference between sender and receiver (seconds).",
    )
    min_secret_bytes: int = Field(
        default=32, ge=16, description="Shortest accepted HMAC secret in bytes (32 = 256 bits)."
    )

    @property
    def nonce_retention_s(self) -> float:
        """How long a seen nonce must be remembered: window + 2 x skew (see README, "Nonce retention")."""
        return self.freshness_window_s + 2 * self.clock_skew_s


class TrustConfig(BaseModel):
    """Agent registry, keys and the GuardrailPolicy of the trust boundary."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    policy: GuardrailPolicy = Field(default_factory=GuardrailPolicy, description="Layer A/C policy.")
    attestation: AttestationConfig = Field(default_factory=AttestationConfig, description="Layer B limits.")
    agents: tuple[AgentConfig, ...] = Field(default=(), description="The agent registry.")

    @model_validator(mode="after")
    def _unique_agents(self) -> Self:
        ids = [a.id for a in self.agents]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"duplicate agent id(s): {', '.join(dupes)}")
        return self
