"""stockade.client: the Python client of prompt-api for agents.

``StockadeClient`` (blocking) and ``AsyncStockadeClient`` (asyncio) have the same methods: get_prompt,
list_prompts, publish_prompt, rollback, prompt_versions, list_skills, get_skill, get_skill_file, publish_skill; the
Manual review queue list_prompt_proposals, decide_prompt_proposal, list_skill_proposals, decide_skill_proposal; and
for guardrail policies get_policy, list_policies, policy_versions, publish_policy, rollback_policy, watch_policy.
"""

from stockade.client.async_client import AsyncStockadeClient
from stockade.client.errors import (
    AuthenticationError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    ServerUnavailableError,
    StockadeClientError,
    ValidationError,
)
from stockade.client.models import (
    PolicyDecision,
    PolicyProposal,
    PolicySummary,
    PolicyVersion,
    PromptDecision,
    PromptProposal,
    PromptSummary,
    PromptVersion,
    SkillDecision,
    SkillDetail,
    SkillFile,
    SkillProposal,
    SkillSummary,
    SkillVersion,
    SkillVersionSummary,
)
from stockade.client.settings import CacheSettings, ClientSettings, PushSettings, RetrySettings
from stockade.client.sync_client import StockadeClient

__all__ = [
    "AsyncStockadeClient",
    "AuthenticationError",
    "CacheSettings",
    "ClientSettings",
    "NotFoundError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "PolicyDecision",
    "PolicyProposal",
    "PolicySummary",
    "PolicyVersion",
    "PromptDecision",
    "PromptProposal",
    "PromptSummary",
    "PromptVersion",
    "PushSettings",
    "RetrySettings",
    "ServerUnavailableError",
    "SkillDecision",
    "SkillDetail",
    "SkillFile",
    "SkillProposal",
    "SkillSummary",
    "SkillVersion",
    "SkillVersionSummary",
    "StockadeClient",
    "StockadeClientError",
    "ValidationError",
]
