"""Settings of an agent on the bus: who it is, how it reaches NATS, and the key it signs with.

Read from the environment (prefix ``STOCKADE_AGENT_``) or passed in code::

    STOCKADE_AGENT_ID=planner
    STOCKADE_AGENT_NATS_URL=nats://nats:4222
    STOCKADE_AGENT_NATS_PASSWORD=...            # the agent's deploy/nats user (user name = agent id)
    STOCKADE_AGENT_NATS_CREDENTIALS_FILE=...    # or a NATS .creds file (JWT deployments)
    STOCKADE_AGENT_SIGNING_KEY_ID=2026-11
    STOCKADE_AGENT_SIGNING_KEY_FILE=/run/secrets/planner-2026-11   # or STOCKADE_AGENT_SIGNING_KEY

The client (:mod:`stockade.guardrails.trust.bus`) needs the ``nats`` extra (nats-py).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from stockade.guardrails.errors import ConfigError
from stockade.guardrails.trust.config import AGENT_ID_PATTERN, KEY_ID_PATTERN


class AgentBusSettings(BaseSettings):
    """One agent's identity, NATS connection and signing key."""

    model_config = SettingsConfigDict(env_prefix="STOCKADE_AGENT_", extra="ignore", frozen=True)

    agent_id: str = Field(
        pattern=AGENT_ID_PATTERN,
        validation_alias=AliasChoices("agent_id", "STOCKADE_AGENT_ID"),
        description="This agent's id: its trust-registry id, NATS user and inbox token.",
    )
    nats_url: str = Field(default="nats://127.0.0.1:4222", description="NATS server(s), comma-separated.")
    nats_user: str | None = Field(
        default=None, description="NATS user name; default the agent id (deploy/nats names users so)."
    )
    nats_password: SecretStr | None = Field(default=None, description="Password of the NATS user.")
    nats_credentials_file: Path | None = Field(
        default=None, description="NATS .creds file (JWT + nkey) instead of user and password."
    )
    signing_key_id: str = Field(
        pattern=KEY_ID_PATTERN, description="Id of the HMAC key this agent signs with."
    )
    signing_key: SecretStr | None = Field(default=None, description="The HMAC secret itself (prefer a file).")
    signing_key_file: Path | None = Field(
        default=None, description="File holding the HMAC secret (a trailing newline is ignored)."
    )
    min_secret_bytes: int = Field(default=32, ge=16, description="Shortest HMAC secret accepted.")
    connect_timeout_s: float = Field(
        default=5.0, gt=0, description="Most the first connection may take; afterwards it reconnects forever."
    )
    request_timeout_s: float = Field(
        default=5.0, gt=0, description="Most send() waits for the trust-broker's delivered/rejected answer."
    )
    inbox_queue: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9_-]{1,64}$",
        description="Queue group of the inbox subscription: replicas of one agent share its messages, each "
        "delivered to one of them. None: the agent id.",
    )

    @model_validator(mode="after")
    def _one_source_each(self) -> AgentBusSettings:
        if (self.signing_key is None) == (self.signing_key_file is None):
            raise ValueError("set exactly one of signing_key and signing_key_file")
        if self.nats_password is not None and self.nats_credentials_file is not None:
            raise ValueError("set nats_password or nats_credentials_file, not both")
        return self

    def secret(self) -> bytes:
        """The signing secret's bytes; ConfigError when its file cannot be read."""
        if self.signing_key is not None:
            return self.signing_key.get_secret_value().encode("utf-8")
        assert self.signing_key_file is not None
        try:
            return self.signing_key_file.read_bytes().rstrip(b"\r\n")
        except OSError as exc:
            raise ConfigError(
                f"signing_key_file: cannot read {self.signing_key_file}: {exc.strerror}"
            ) from None
