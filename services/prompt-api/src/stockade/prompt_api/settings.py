"""prompt-api settings: env prefix ``PROMPT_API_``, nested with ``__`` (``PROMPT_API_LIMITS__MAX_BODY_BYTES``)."""

from __future__ import annotations

from pydantic import AliasChoices, BaseModel, Field
from pydantic_settings import SettingsConfigDict

from stockade.identity import Deployment
from stockade.runtime.settings import HttpSettings, ServiceSettings
from stockade.runtime.settings import OutboxSettings as OutboxSettings  # shared model, re-exported

MIB = 1024 * 1024


class LimitSettings(BaseModel):
    """Size limits of published content (documented in the README)."""

    max_body_bytes: int = Field(default=8 * MIB, ge=1024, description="Largest request body (413 above).")
    max_prompt_bytes: int = Field(default=256 * 1024, ge=1, description="Prompt content + config as JSON.")
    max_skill_md_bytes: int = Field(default=256 * 1024, ge=1, description="Largest SKILL.md (UTF-8 bytes).")
    max_skill_file_bytes: int = Field(default=2 * MIB, ge=1, description="Largest skill file, decoded.")
    max_skill_total_bytes: int = Field(default=6 * MIB, ge=1, description="All files of one skill version.")
    max_skill_files: int = Field(default=200, ge=1, description="Files per skill version (SKILL.md aside).")
    max_policy_bytes: int = Field(
        default=64 * 1024, ge=1, description="Largest guardrail policy YAML (UTF-8 bytes)."
    )


class ReadPathSettings(BaseModel):
    """The hot read (GET /prompts/active-prompt-version) on PostgreSQL: its own asyncpg pool, batched statements."""

    statements_in_flight: int = Field(
        default=2,
        ge=1,
        le=64,
        description="Read statements running at once (the read pool's size); requests that arrive while all "
        "run are sent together in the next statement, one row each.",
    )
    max_batch: int = Field(default=64, ge=1, le=1000, description="Most requests in one read statement.")


class PromptApiSettings(ServiceSettings):
    model_config = SettingsConfigDict(env_prefix="PROMPT_API_", env_nested_delimiter="__", extra="ignore")

    service_name: str = Field(default="prompt-api", description="Name used in logs and health answers.")
    http: HttpSettings = Field(default_factory=lambda: HttpSettings(port=8101))
    deployment: Deployment = Field(
        default=Deployment.ONPREM,
        validation_alias=AliasChoices("PROMPT_API_DEPLOYMENT", "STOCKADE_DEPLOYMENT", "deployment"),
        description="onprem (read and write keys) or hosted (keys only read).",
    )
    migrate_on_startup: bool = Field(
        default=True, description="Run the identity and prompt-api migrations when the app starts."
    )
    limits: LimitSettings = Field(default_factory=LimitSettings)
    outbox: OutboxSettings = Field(
        default_factory=OutboxSettings,
        description="The relay that sends publish events to JetStream after the commit.",
    )
    read_path: ReadPathSettings = Field(default_factory=ReadPathSettings)
    gc_freeze: bool = Field(
        default=True,
        description="After startup, move every object alive then (modules, app, pools) out of the garbage "
        "collector's reach (gc.freeze): full collections then scan only what requests made, instead of "
        "stalling every request in flight while they walk the startup heap (README, 'The read tail').",
    )
