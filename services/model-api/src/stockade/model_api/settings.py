"""Settings of model-api (environment prefix ``MODEL_API_``, nested with ``__``)."""

from __future__ import annotations

from typing import Literal

from pydantic import AliasChoices, BaseModel, Field
from pydantic_settings import SettingsConfigDict

from stockade.contracts.run_store import MAX_EXPORT_PAGE, MAX_PAGE_RUNS
from stockade.identity import Deployment
from stockade.runtime.settings import HttpSettings, ServiceSettings
from stockade.runtime.settings import OutboxSettings as OutboxSettings  # shared model, re-exported


class SessionSettings(BaseModel):
    """The console's session cookie."""

    cookie_name: str = Field(default="stockade_session", description="Name of the session cookie.")
    ttl_hours: float = Field(default=12.0, gt=0, le=24 * 30, description="Absolute lifetime of a session.")
    idle_minutes: float = Field(
        default=60.0,
        ge=0,
        le=24 * 60 * 30,
        description="A session unused for this long ends (0: no idle limit; ttl_hours holds either way).",
    )
    secure: Literal["auto", "always", "never"] = Field(
        default="always",
        description="Secure cookie attribute: always (default; browsers also keep it on http://localhost), auto "
        "(when the request came over https, directly or per a trusted proxy: http.proxy_headers), never "
        "(plain http on another host; stockade up sets it).",
    )
    trusted_origins: list[str] = Field(
        default_factory=list,
        description="Extra origins (scheme://host[:port]) allowed to send state-changing requests.",
    )


class SignInSettings(BaseModel):
    """Sign-in rate limit: failed attempts per e-mail and per client address within a window."""

    window_s: int = Field(default=15 * 60, ge=1, description="Window over which failures are counted.")
    max_failures_per_email: int = Field(default=5, ge=1, description="Failures per e-mail in the window.")
    max_failures_per_client: int = Field(default=20, ge=1, description="Failures per client address.")
    client_ip_header: str | None = Field(
        default=None,
        description=(
            "Header carrying the client address (e.g. X-Forwarded-For; its last entry is used) when a proxy you "
            "control sets it. Unset: the TCP peer address."
        ),
    )


class LimitSettings(BaseModel):
    max_body_bytes: int = Field(default=64 * 1024, ge=1024, description="Largest request body (413 above).")


class RunStoreSettings(BaseModel):
    """How the console's run pages read guardrail run events: from guardrail-ingest, which owns the run store
    (typed commands on ``guardrail.cmd.read_runs.v2``; README, "Runs and decisions"). The console holds no store
    connection."""

    timeout_s: float = Field(default=10.0, gt=0, description="Timeout of one read (one NATS request).")
    page_size: int = Field(default=50, ge=1, le=MAX_PAGE_RUNS, description="Runs per page of the runs list.")
    max_export_events: int = Field(
        default=100_000,
        ge=1,
        le=5_000_000,
        description="Most events one CSV or JSON export holds (newest first); it streams, page by page.",
    )
    export_page: int = Field(
        default=500,
        ge=1,
        le=MAX_EXPORT_PAGE,
        description="Events asked of guardrail-ingest per export page (one NATS request each).",
    )


class PromptApiLink(BaseModel):
    """Where the console reaches prompt-api (server side, as the signed-in user: the session's credential)."""

    url: str = Field(
        default="http://127.0.0.1:8101", description="Base URL of prompt-api as the console's server sees it."
    )
    timeout_s: float = Field(default=10.0, gt=0, le=120, description="Timeout of one call to prompt-api.")


class ModelApiSettings(ServiceSettings):
    model_config = SettingsConfigDict(env_prefix="MODEL_API_", env_nested_delimiter="__", extra="ignore")

    service_name: str = "model-api"
    http: HttpSettings = Field(default_factory=lambda: HttpSettings(port=8102))
    deployment: Deployment = Field(
        default=Deployment.ONPREM,
        validation_alias=AliasChoices("MODEL_API_DEPLOYMENT", "STOCKADE_DEPLOYMENT", "deployment"),
        description="onprem (API keys get a read or write scope) or hosted (keys have no scope, read only).",
    )
    migrate_on_startup: bool = Field(
        default=True, description="Run the identity and model-api migrations when the app starts."
    )
    session: SessionSettings = Field(default_factory=SessionSettings)
    sign_in: SignInSettings = Field(default_factory=SignInSettings)
    limits: LimitSettings = Field(default_factory=LimitSettings)
    outbox: OutboxSettings = Field(
        default_factory=OutboxSettings,
        description="The relay that sends committed events (model.changed.v1, dbconfig.activated.v1, ...) to JetStream.",
    )
    runs: RunStoreSettings = Field(
        default_factory=RunStoreSettings, description="The guardrail run store the run pages read."
    )
    prompt_api: PromptApiLink = Field(
        default_factory=PromptApiLink,
        description="prompt-api, for the prompt and skill pages (which act with the user's own API key).",
    )
