"""stockade.client: the Python client of prompt-api for agents.

``StockadeClient`` (blocking) and ``AsyncStockadeClient`` (asyncio) have the same methods: get_prompt,
list_prompts, publish_prompt, rollback, prompt_versions, list_skills, get_skill, get_skill_file, publish_skill.
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
    PromptSummary,
    PromptVersion,
    SkillDetail,
    SkillFile,
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
    "PromptSummary",
    "PromptVersion",
    "PushSettings",
    "RetrySettings",
    "ServerUnavailableError",
    "SkillDetail",
    "SkillFile",
    "SkillSummary",
    "SkillVersion",
    "SkillVersionSummary",
    "StockadeClient",
    "StockadeClientError",
    "ValidationError",
]
