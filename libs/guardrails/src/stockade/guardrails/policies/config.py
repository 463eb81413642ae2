"""Configuration of the policy checks: token budgets, tool authorization and rate limits.

Every field has a default and a description. Limits left at ``None`` are off. Loading happens through the root
:class:`~stockade.guardrails.config.GuardrailsConfig`, which names the bad key (``guardrails.policies...``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from stockade.contracts.limits import AGENT_RATE_LIMIT_MAX_BYTES
from stockade.contracts.subjects import KV_RATE_LIMITS, agent_reply_prefix, rate_limit_bucket


class TokenBudgetConfig(BaseModel):
    """Token budget enforcement (spec 1 and 8): checked over the full request context before the model runs."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(default=True, description="Check token budgets at all.")
    per_request: int | None = Field(
        default=None,
        gt=0,
        description="Most tokens one request (system, messages, tool definitions) may use.",
    )
    per_run: int | None = Field(
        default=None, gt=0, description="Most tokens (input and output) all requests of one run may use."
    )
    block_on_exceeded: bool = Field(
        default=True, description="True: an over-budget request is blocked. False: it passes with a warning."
    )
    max_unmanaged_runs: int = Field(
        default=10_000,
        gt=0,
        description="Most run totals kept for run ids never opened by begin_run() (generate(run_id=...) "
        "alone); past it the least recently charged one is forgotten. Runs opened by begin_run() are kept "
        "until their end_run().",
    )
    counter: Literal["tiktoken", "approximate"] = Field(
        default="tiktoken",
        description="'tiktoken' counts with the model's BPE encoding (needs the 'tokens' extra); "
        "'approximate' counts one token per 4 characters.",
    )
    fallback_encoding: Literal["o200k_base", "cl100k_base"] = Field(
        default="o200k_base",
        description="Encoding used for models tiktoken does not know (Claude, Gemini, ...).",
    )


class SensitiveToolConfig(BaseModel):
    """Rules an approval of a sensitive tool call must meet."""

    model_config = ConfigDict(extra="forbid")

    approvers: list[str] = Field(
        default_factory=list, description="Who may approve calls of this tool; empty means anyone."
    )
    max_age_seconds: float = Field(
        default=900.0,
        gt=0,
        description="An approval older than this is expired, and an expired one is a denial.",
    )


class ToolsConfig(BaseModel):
    """Tool authorization: role allowlists, a global denylist (deny wins), sensitive tools needing approval.

    Tool names may be glob patterns (``db.*``, ``*``).
    """

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(default=True, description="Authorize tool calls at all.")
    roles: dict[str, list[str]] = Field(
        default_factory=dict, description="Role name -> tools (glob patterns) that role may call."
    )
    deny: list[str] = Field(
        default_factory=list, description="Tools (glob patterns) nobody may call. Deny wins."
    )
    default_allow: bool = Field(
        default=False,
        description="Allow tools when no role allowlist is configured for the caller's role. Off: unknown roles "
        "and unlisted tools are denied.",
    )
    sensitive: dict[str, SensitiveToolConfig] = Field(
        default_factory=dict,
        description="Tool name (glob pattern) -> approval rules; a call needs an approval.",
    )
    clock_skew_seconds: float = Field(
        default=30.0, ge=0, description="How far in the future an approval timestamp may lie (clock skew)."
    )


class NatsBackendConfig(BaseModel):
    """Where the NATS JetStream key-value backend keeps the counters."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field(default="nats://127.0.0.1:4222", description="NATS server URL.")
    agent_id: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9_-]{1,64}$",
        description="The agent's id when it connects as its deploy/nats user: the counters then live in its own "
        "bucket 'guardrail_rate_limits_<id>' (bounded to 32 MiB), replies on '_INBOX_<id>', the only ones "
        "deploy/nats grants it. An explicit bucket, inbox_prefix or max_bytes still wins.",
    )
    bucket: str = Field(
        default=KV_RATE_LIMITS,
        pattern=r"^[A-Za-z0-9_-]+$",
        description="JetStream key-value bucket holding the counters (the one deploy/nats grants agents).",
    )
    inbox_prefix: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9_-]+$",
        description="Reply subject prefix of the JetStream requests. An agent connecting as its deploy/nats "
        "user needs '_INBOX_<agent id>' (the only replies it may read); None: '_INBOX_<user>' when the URL "
        "names a user (what deploy/nats grants every user), else nats-py's '_INBOX'.",
    )
    ttl_seconds: float = Field(
        default=86400.0,
        gt=0,
        description="Bucket-level TTL (its age limit): counters of idle sessions disappear after this.",
    )
    max_bytes: int = Field(
        default=256 * 1024 * 1024,
        gt=0,
        description="Size bound of the bucket when this creates it; full: new counters fail, the check fails closed.",
    )
    max_retries: int = Field(
        default=100, gt=0, description="Attempts of one compare-and-set update before giving up."
    )
    max_reconnect_attempts: int = Field(
        default=60,
        ge=0,
        description="Reconnection attempts after a drop, in the background (checks fail closed meanwhile); a "
        "client that gave up is replaced on the next check.",
    )
    reconnect_wait_seconds: float = Field(default=0.5, ge=0, description="Pause between connection attempts.")
    timeout_seconds: float = Field(
        default=2.0,
        gt=0,
        description="Most one rate-limit check waits for the store (connecting included) before it fails "
        "closed with CheckUnavailableError.",
    )

    @model_validator(mode="after")
    def _agent_defaults(self) -> NatsBackendConfig:
        if self.agent_id is None:
            return self
        given = self.model_fields_set
        if "bucket" not in given:
            self.bucket = rate_limit_bucket(self.agent_id)
        if "inbox_prefix" not in given:
            self.inbox_prefix = agent_reply_prefix(self.agent_id)
        if "max_bytes" not in given:
            self.max_bytes = AGENT_RATE_LIMIT_MAX_BYTES
        return self


class RateLimitsConfig(BaseModel):
    """Per-session quotas (spec 8) and where the counters live."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(default=True, description="Enforce rate limits at all.")
    requests_per_session: int | None = Field(
        default=None, gt=0, description="Most model requests (before_request calls) per session."
    )
    tool_calls_per_session: int | None = Field(
        default=None, gt=0, description="Most tool calls (check_tool_call_limit calls) per session."
    )
    tool_execution_seconds: float | None = Field(
        default=None, gt=0, description="Most cumulative tool execution time per session, in seconds."
    )
    backend: Literal["memory", "nats"] = Field(
        default="memory", description="'memory' (one process) or 'nats' (JetStream KV, shared by processes)."
    )
    nats: NatsBackendConfig = Field(default_factory=NatsBackendConfig, description="NATS backend settings.")


class PoliciesConfig(BaseModel):
    """Token budgets, tool authorization and rate limits."""

    model_config = ConfigDict(extra="forbid")

    token_budget: TokenBudgetConfig = Field(default_factory=TokenBudgetConfig, description="Token budgets.")
    tools: ToolsConfig = Field(default_factory=ToolsConfig, description="Tool authorization.")
    rate_limits: RateLimitsConfig = Field(default_factory=RateLimitsConfig, description="Per-session quotas.")

    @model_validator(mode="after")
    def _per_run_covers_per_request(self) -> PoliciesConfig:
        tb = self.token_budget
        if tb.per_request is not None and tb.per_run is not None and tb.per_run < tb.per_request:
            raise ValueError("token_budget.per_run must be at least token_budget.per_request")
        return self


__all__ = [
    "NatsBackendConfig",
    "PoliciesConfig",
    "RateLimitsConfig",
    "SensitiveToolConfig",
    "TokenBudgetConfig",
    "ToolsConfig",
]
