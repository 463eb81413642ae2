"""prompt-api: versioned prompts and agent skills per project for API-key holders."""

from stockade.prompt_api.errors import (
    BodyTooLarge,
    Forbidden,
    InvalidContent,
    InvalidPath,
    NotFound,
    PromptApiError,
)
from stockade.prompt_api.main import create_app
from stockade.prompt_api.settings import LimitSettings, OutboxSettings, PromptApiSettings

__all__ = [
    "BodyTooLarge",
    "Forbidden",
    "InvalidContent",
    "InvalidPath",
    "LimitSettings",
    "NotFound",
    "OutboxSettings",
    "PromptApiError",
    "PromptApiSettings",
    "create_app",
]
