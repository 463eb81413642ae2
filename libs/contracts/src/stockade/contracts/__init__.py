"""stockade.contracts: pydantic message schemas and the one module (``subjects``) naming every subject."""

from stockade.contracts import subjects
from stockade.contracts.envelope import (
    ActiveDbConfig,
    ApiKeyRevoked,
    DbConfigActivated,
    EventEnvelope,
    GuardrailEventDeadLettered,
    GuardrailEventsReceived,
    IngestKeyQuery,
    IngestKeyVerdict,
    ModelChanged,
    PolicyPublished,
    PromptPublished,
    SkillPublished,
    TrustRejected,
)
from stockade.contracts.policy import PolicyRef
from stockade.contracts.run_store import RunScope, RunStoreReply, RunStoreRequest

__all__ = [
    "ActiveDbConfig",
    "ApiKeyRevoked",
    "DbConfigActivated",
    "EventEnvelope",
    "GuardrailEventDeadLettered",
    "GuardrailEventsReceived",
    "IngestKeyQuery",
    "IngestKeyVerdict",
    "ModelChanged",
    "PolicyPublished",
    "PolicyRef",
    "PromptPublished",
    "RunScope",
    "RunStoreReply",
    "RunStoreRequest",
    "SkillPublished",
    "TrustRejected",
    "subjects",
]
