"""stockade.guardrails: the library agents embed (input/output rails, policies, LLMRails, agent trust).

Import it as ``stockade.guardrails`` (the bare name ``guardrails`` belongs to the guardrails-ai package).
Importing this package needs no optional extra and connects to nothing.
"""

from stockade.guardrails.checks.base import CheckContext, ContentCheck
from stockade.guardrails.checks.config import ContentChecksConfig, Stage
from stockade.guardrails.checks.registry import register_check
from stockade.guardrails.config import GuardrailsConfig, load_config
from stockade.guardrails.errors import (
    AttestationError,
    BudgetExceededError,
    CheckUnavailableError,
    ConfigError,
    GuardrailError,
    MissingExtraError,
    PrivilegeError,
)
from stockade.guardrails.llm.checked_memory import CheckedMessages
from stockade.guardrails.llm.config import ModelConfig
from stockade.guardrails.llm.message_checks import MessageCheck
from stockade.guardrails.llm.providers import ModelProvider, ModelProviderError, build_provider
from stockade.guardrails.llm.rails import LLMRails
from stockade.guardrails.llm.rails_stream import RailsStream
from stockade.guardrails.llm.result import GenerationResult
from stockade.guardrails.messages import (
    ChatMessage,
    ChatRequest,
    ModelResponse,
    TokenUsage,
    ToolCall,
    ToolDefinition,
)
from stockade.guardrails.policies import (
    AgentHooks,
    Approval,
    InMemoryCounterStore,
    NatsKVCounterStore,
    PoliciesConfig,
    PolicyEngine,
    RateLimiter,
    TokenBudget,
    ToolAuthorizer,
    ToolCallTicket,
    args_hash,
)
from stockade.guardrails.storage import BackendGuardrailSink, FlushResult, GuardrailsStorageHook
from stockade.guardrails.system import GuardrailSystem
from stockade.guardrails.trust import (
    AgentIdentity,
    AgentRegistry,
    AgentTrustEnforcer,
    AgentTrustHook,
    AttestationEnvelope,
    AttestationResult,
    AttestationVerifier,
    GuardrailPolicy,
    InMemoryNonceStore,
    KeyRing,
    NonceStore,
    RejectionReason,
    SignedMessage,
    TrustConfig,
    TrustLevel,
    content_validator_from_guardrail_system,
)
from stockade.guardrails.verdict import Action, CheckResult, Finding, Verdict

__version__ = "0.1.2"

# Each area appends its public names in its own block below; keep blocks sorted and separate.
__all__ = [
    "Action",
    "AttestationError",
    "BudgetExceededError",
    "CheckResult",
    "CheckUnavailableError",
    "ConfigError",
    "Finding",
    "GuardrailError",
    "GuardrailsConfig",
    "MissingExtraError",
    "PrivilegeError",
    "Verdict",
    "load_config",
]

# --- content checks ---
__all__ += [
    "CheckContext",
    "ContentCheck",
    "ContentChecksConfig",
    "GuardrailSystem",
    "Stage",
    "register_check",
]

# --- agent trust (stockade.guardrails.trust; JetStreamNonceStore is imported from there, it needs nats-py) ---
__all__ += [
    "AgentIdentity",
    "AgentRegistry",
    "AgentTrustEnforcer",
    "AgentTrustHook",
    "AttestationEnvelope",
    "AttestationResult",
    "AttestationVerifier",
    "GuardrailPolicy",
    "InMemoryNonceStore",
    "KeyRing",
    "NonceStore",
    "RejectionReason",
    "SignedMessage",
    "TrustConfig",
    "TrustLevel",
    "content_validator_from_guardrail_system",
]

# --- policies (token budget, tool authorization, rate limits) and LLMRails ---
__all__ += [
    "AgentHooks",
    "Approval",
    "ChatMessage",
    "ChatRequest",
    "CheckedMessages",
    "GenerationResult",
    "InMemoryCounterStore",
    "LLMRails",
    "MessageCheck",
    "ModelConfig",
    "ModelProvider",
    "ModelProviderError",
    "ModelResponse",
    "NatsKVCounterStore",
    "PoliciesConfig",
    "PolicyEngine",
    "RailsStream",
    "RateLimiter",
    "TokenBudget",
    "TokenUsage",
    "ToolAuthorizer",
    "ToolCall",
    "ToolCallTicket",
    "ToolDefinition",
    "args_hash",
    "build_provider",
]

# --- storage of run data (stockade.guardrails.storage) ---
__all__ += [
    "BackendGuardrailSink",
    "FlushResult",
    "GuardrailsStorageHook",
]
