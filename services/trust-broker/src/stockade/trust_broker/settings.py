"""trust-broker settings: ``TRUST_BROKER_`` environment prefix, nested with ``__``.

``TRUST_BROKER_CONFIG_PATH=/etc/stockade/trust.yaml`` (registry, keys, policy: the ``guardrails.trust``
section), ``TRUST_BROKER_NATS__URL``, ``TRUST_BROKER_NATS__USER``, ``TRUST_BROKER_NATS__PASSWORD``,
``TRUST_BROKER_CONTENT_VALIDATION__ENABLED=true`` (layer D).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from stockade.contracts import subjects
from stockade.contracts.limits import BUCKET_MAX_BYTES, STREAM_LIMITS
from stockade.runtime.settings import HttpSettings, ServiceSettings
from stockade.trust_broker.content import ContentValidationSettings


class TrustBrokerSettings(ServiceSettings):
    model_config = SettingsConfigDict(env_prefix="TRUST_BROKER_", env_nested_delimiter="__", extra="ignore")

    service_name: str = Field(default="trust-broker", description="Name used in logs and health answers.")
    http: HttpSettings = Field(
        default_factory=lambda: HttpSettings(port=8105),
        description="The listener of GET /metrics and /healthz (the broker has no other HTTP API).",
    )
    config_path: Path = Field(
        default=Path("trust.yaml"),
        description="YAML with the guardrails.trust section (agents, keys, policy); reloaded when it changes.",
    )
    reload_interval_s: float = Field(
        default=2.0, gt=0, description="How often the config file's modification time is checked."
    )
    nonce_store: Literal["jetstream", "memory"] = Field(
        default="jetstream",
        description="jetstream: shared by every replica (required with more than one); memory: one process only.",
    )
    nonce_bucket: str = Field(default=subjects.KV_TRUST_NONCES, description="JetStream KV bucket of nonces.")
    nonce_bucket_max_bytes: int = Field(
        default=BUCKET_MAX_BYTES[subjects.KV_TRUST_NONCES],
        gt=0,
        description="Size bound of the nonce bucket (when creating it); full: claims fail, messages are rejected.",
    )
    rejected_stream_max_bytes: int = Field(
        default=STREAM_LIMITS["TRUST"].max_bytes,
        gt=0,
        description="Size bound of the TRUST stream (creating it).",
    )
    rejected_stream_max_age_s: float = Field(
        default=STREAM_LIMITS["TRUST"].max_age_s, gt=0, description="trust.rejected.v1 is kept this long."
    )
    queue: str = Field(default=subjects.TRUST_BROKER_QUEUE, description="Queue group shared by replicas.")
    content_validation: ContentValidationSettings = Field(
        default_factory=ContentValidationSettings,
        description="Layer D: re-validate every payload with the guardrails' content checks "
        "(TRUST_BROKER_CONTENT_VALIDATION__ENABLED=true; stockade.trust_broker.content).",
    )
    max_workers: int = Field(
        default=256,
        ge=1,
        le=4096,
        description="Submissions verified concurrently (JetStream nonce claims in flight at once).",
    )
