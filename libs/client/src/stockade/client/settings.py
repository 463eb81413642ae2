"""Client configuration: nested pydantic models, every field with a default and a description."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field


class RetrySettings(BaseModel):
    """Retries of reads after transport errors, timeouts and 5xx (never after a 4xx; publishes: see below)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    attempts: int = Field(default=3, ge=1, le=10, description="Tries per read, the first included.")
    backoff_s: float = Field(default=0.1, ge=0, description="Wait before the second try; doubles each time.")
    max_backoff_s: float = Field(default=2.0, ge=0, description="Upper bound of one wait.")


class CacheSettings(BaseModel):
    """The in-process cache of prompt reads and skill files, revalidated with ETag / If-None-Match."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = Field(default=True, description="Keep the last good copy of each read and revalidate it.")
    serve_stale_when_unreachable: bool = Field(
        default=True,
        description="Serve the last good copy (with a WARNING log line) when the server is unreachable or 5xx.",
    )
    push_trust_s: float = Field(
        default=60.0,
        ge=0,
        description="With push refresh on, a cached prompt is served without a request for this long "
        "(a prompt.published.v1 event invalidates it at once); 0 revalidates every read.",
    )


class PushSettings(BaseModel):
    """Optional refresh on prompt.published.v1 (needs the `push` extra: nats-py)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    nats_url: str | None = Field(
        default=None, description="NATS server to subscribe on; None turns push off."
    )
    connect_timeout_s: float = Field(default=2.0, gt=0, description="Timeout of the NATS connection.")
    project_ids: tuple[Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")], ...] = Field(
        default=(),
        description="Projects whose prompt.published.v1.<project> events to follow: an agent on deploy/nats "
        "may read only the projects it works for. Empty: every project (prompt.published.v1.*), on a bus "
        "without per-project grants.",
    )


class ClientSettings(BaseModel):
    """Everything but the key (the key is passed on its own and never stored in settings)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str = Field(default="http://127.0.0.1:8101", description="prompt-api's base URL.")
    timeout_s: float = Field(default=5.0, gt=0, description="Timeout of one HTTP request.")
    retry: RetrySettings = Field(default_factory=RetrySettings, description="Read retries.")
    cache: CacheSettings = Field(default_factory=CacheSettings, description="ETag cache and last good copy.")
    push: PushSettings = Field(default_factory=PushSettings, description="Push refresh over NATS.")
    policy_poll_s: float = Field(
        default=30.0,
        ge=0,
        description="A watched guardrail policy that push does not bring (no push.nats_url, the subject not "
        "granted, NATS disconnected) is re-read this often (ETag: a 304 when unchanged); 0: never.",
    )
