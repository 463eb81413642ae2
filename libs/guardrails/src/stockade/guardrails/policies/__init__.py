"""Policy checks: token budgets, tool authorization and rate limits, with the agent hooks that enforce them."""

from stockade.guardrails.policies.approval import Approval, args_hash
from stockade.guardrails.policies.budget import TokenBudget
from stockade.guardrails.policies.config import (
    NatsBackendConfig,
    PoliciesConfig,
    RateLimitsConfig,
    SensitiveToolConfig,
    TokenBudgetConfig,
    ToolsConfig,
)
from stockade.guardrails.policies.counters import CounterStore, InMemoryCounterStore, NatsKVCounterStore
from stockade.guardrails.policies.engine import AgentHooks, PolicyEngine
from stockade.guardrails.policies.rate_limits import RateLimiter, ToolCallTicket
from stockade.guardrails.policies.tokens import (
    ApproximateTokenCounter,
    TiktokenCounter,
    TokenCounter,
    ensure_offline_encodings,
)
from stockade.guardrails.policies.tools import ToolAuthorizer, ToolCallOptions, ToolRequest

__all__ = [
    "AgentHooks",
    "Approval",
    "ApproximateTokenCounter",
    "CounterStore",
    "InMemoryCounterStore",
    "NatsBackendConfig",
    "NatsKVCounterStore",
    "PoliciesConfig",
    "PolicyEngine",
    "RateLimiter",
    "RateLimitsConfig",
    "SensitiveToolConfig",
    "TiktokenCounter",
    "TokenBudget",
    "TokenBudgetConfig",
    "TokenCounter",
    "ToolAuthorizer",
    "ToolCallOptions",
    "ToolCallTicket",
    "ToolRequest",
    "ToolsConfig",
    "args_hash",
    "ensure_offline_encodings",
]
