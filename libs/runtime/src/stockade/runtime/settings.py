"""Settings base every service extends: one env prefix per service, nested NATS, DB, HTTP and log settings.

``PROMPT_API_DB__URL=postgresql+asyncpg://...`` sets ``settings.db.url`` of prompt-api (nested with ``__``).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

STATE_DIR = Path(".stockade")
DEFAULT_SQLITE_URL = f"sqlite+aiosqlite:///./{STATE_DIR}/stockade.db"
DEFAULT_NATS_URL = "nats://127.0.0.1:14222"


class NatsSettings(BaseModel):
    """Connection to the NATS server (JetStream enabled)."""

    url: str = Field(default=DEFAULT_NATS_URL, description="nats:// URL; several servers comma-separated.")
    user: str | None = Field(default=None, description="NATS user (least-privilege per service).")
    password: SecretStr | None = Field(default=None, description="NATS password.")
    creds_file: Path | None = Field(default=None, description="NATS .creds file (decentralised auth).")
    inbox_prefix: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9_-]{1,80}$",
        description="Prefix of this connection's reply inboxes. Default: _INBOX_<user> with a user (deploy/nats "
        "lets each user read only its own replies), nats-py's _INBOX without one.",
    )
    connect_timeout_s: float = Field(default=2.0, gt=0, description="Timeout of one connection attempt.")
    startup_wait_s: float = Field(default=20.0, ge=0, description="How long startup retries before failing.")
    drain_timeout_s: float = Field(default=10.0, gt=0, description="Graceful drain budget on shutdown.")
    stream_replicas: int = Field(
        default=1,
        ge=1,
        le=5,
        description="Copies of each JetStream stream and bucket the service creates: 1 on a single server, 3 on "
        "a three-node cluster (deploy/nats/cluster.conf); an existing stream with fewer copies is scaled up.",
    )

    def servers(self) -> list[str]:
        return [u.strip() for u in self.url.split(",") if u.strip()]

    def reply_prefix(self) -> str:
        """The inbox prefix this connection's requests use (``inbox_prefix``, else per user)."""
        if self.inbox_prefix:
            return self.inbox_prefix
        return reply_prefix_of(self.user)


def reply_prefix_of(user: str | None) -> str:
    """``_INBOX_<user>`` (stockade.contracts.subjects.user_reply_prefix), or nats-py's ``_INBOX`` without a user."""
    if not user:
        return "_INBOX"
    from stockade.contracts.subjects import user_reply_prefix

    return user_reply_prefix(user)


class DatabaseSettings(BaseModel):
    """The relational database: SQLite (embedded default) or PostgreSQL via asyncpg."""

    url: str = Field(
        default=DEFAULT_SQLITE_URL, description="SQLAlchemy URL; postgresql:// and sqlite:// accepted."
    )
    echo: bool = Field(default=False, description="Log SQL statements (never enable in production).")
    pool_size: int = Field(default=5, ge=1, description="PostgreSQL connection pool size.")
    pool_pre_ping: bool = Field(
        default=True,
        description="Test each pooled PostgreSQL connection with a round trip before use (stale-safe, slower).",
    )
    max_overflow: int = Field(default=5, ge=0, description="Extra PostgreSQL connections under load.")


class HttpSettings(BaseModel):
    """Where an HTTP service listens, and which proxy in front of it is trusted."""

    host: str = Field(default="127.0.0.1", description="Bind address.")
    port: int = Field(default=8000, ge=0, le=65535, description="TCP port (0 picks a free one).")
    proxy_headers: bool = Field(
        default=False,
        description="Behind a TLS-terminating proxy: take the scheme and client address from X-Forwarded-Proto "
        "and X-Forwarded-For when the connection comes from forwarded_allow_ips (uvicorn's proxy headers).",
    )
    forwarded_allow_ips: str = Field(
        default="127.0.0.1",
        description="Comma-separated addresses or networks (CIDR) of the proxies trusted with proxy_headers; "
        "'*' trusts every peer (only where nothing else can reach the port).",
    )
    hsts_max_age_s: int = Field(
        default=365 * 24 * 3600,
        ge=0,
        description="Strict-Transport-Security max-age sent on requests that came over https (0: none).",
    )
    docs: bool | None = Field(
        default=None,
        description="Serve the interactive API pages /docs and /redoc (their script comes from a CDN, exempt from "
        "the content security policy). None: the service's default (on, but off on model-api, the console's "
        "origin). /openapi.json is served either way.",
    )


class LogSettings(BaseModel):
    level: str = Field(default="INFO", description="Root log level.")
    json_format: bool = Field(default=True, description="One JSON object per line (False: human-readable).")
    access_log: bool = Field(
        default=False,
        description="One line per HTTP request (method, route template, status, milliseconds, trace id).",
    )


class OutboxSettings(BaseModel):
    """A transactional outbox relay (``stockade.runtime.outbox``): sends committed events to JetStream.

    A service nests it as ``outbox``: ``PROMPT_API_OUTBOX__INTERVAL_S``, ``MODEL_API_OUTBOX__RETAIN_SENT_S``.
    """

    enabled: bool = Field(default=True, description="Run the relay in this process.")
    interval_s: float = Field(
        default=2.0,
        gt=0,
        description="Retry interval while NATS is unreachable (a commit wakes the relay at once).",
    )
    batch_size: int = Field(default=100, ge=1, description="Events read per relay round.")
    retain_sent_s: float = Field(
        default=7 * 24 * 3600, ge=0, description="How long sent events stay in the outbox table (for audits)."
    )
    stop_timeout_s: float = Field(
        default=10.0,
        gt=0,
        description="Shutdown budget: the current round finishes and what is pending is sent; then the relay is "
        "cancelled and unsent events wait for the next start.",
    )


class ServiceSettings(BaseSettings):
    """Base of every service's settings. Subclasses set ``env_prefix`` and the default HTTP port."""

    model_config = SettingsConfigDict(env_nested_delimiter="__", extra="ignore")

    service_name: str = Field(default="stockade", description="Name used in logs and health answers.")
    nats: NatsSettings = Field(default_factory=NatsSettings)
    db: DatabaseSettings = Field(default_factory=DatabaseSettings)
    http: HttpSettings = Field(default_factory=HttpSettings)
    log: LogSettings = Field(default_factory=LogSettings)
    shutdown_timeout_s: float = Field(
        default=15.0,
        gt=0,
        description="Budget of the whole stop once the HTTP server has drained (bus, relay, pools, database): a "
        "step still running past it is cancelled, then abandoned and named in the log.",
    )
