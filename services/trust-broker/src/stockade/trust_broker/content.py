"""Layer D in the broker: re-validating every payload with the guardrails' content checks (spec 4.4).

``verify_message()`` runs layers A to D, D when a content validator is wired. With ``content_validation.enabled``
the broker builds one :class:`~stockade.guardrails.system.GuardrailSystem` at start (models load and warm up
once, before the first submission is consumed), wraps it with ``content_validator_from_guardrail_system()`` and
wires it into every enforcer it builds, reloads included. A payload whose re-validation blocks is refused like
any rejection: reply ``content_rejected`` / layer ``D``, a ``trust.rejected.v1`` event, nothing in the inbox.

The broker never alters a payload (it is signed): a check that would *mask* lets the payload through unchanged;
only a block refuses it. Masking belongs to the receiver's own rails.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from stockade.guardrails.system import GuardrailSystem
from stockade.guardrails.trust import ContentValidator, content_validator_from_guardrail_system

BROKER_CHECKS: dict[str, Any] = {"guardrails": {"checks": {"pii": {"enabled": False}}}}
"""The checks without ``guardrails_config``: the library's defaults (the attack classifier on input and
context, exfiltration on output) except PII, whose verdict is a mask the broker cannot apply to a signed
payload, and whose spaCy pipeline the broker image does not carry."""


class ContentValidationSettings(BaseModel):
    """``TRUST_BROKER_CONTENT_VALIDATION__*``: layer D."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(
        default=False,
        description="Re-validate every payload with the content checks (layer D); a blocked one is rejected.",
    )
    guardrails_config: Path | None = Field(
        default=None,
        description="YAML of the GuardrailSystem whose checks run (a guardrails file: its checks section); "
        "unset: the library defaults without PII (BROKER_CHECKS).",
    )
    stages: tuple[Literal["input", "output"], ...] = Field(
        default=("input",),
        min_length=1,
        description="Rails run on the payload, in order: input (it becomes the receiver's input: the attack "
        "classifier), output (also output-only checks such as exfiltration). JSON list in the environment.",
    )


async def build_content_validator(settings: ContentValidationSettings) -> ContentValidator | None:
    """The layer-D validator the settings ask for (None when disabled), its checks warmed up."""
    if not settings.enabled:
        return None
    config: Any = settings.guardrails_config if settings.guardrails_config is not None else BROKER_CHECKS
    system = GuardrailSystem(config)
    await system.warmup()
    return content_validator_from_guardrail_system(system, stages=settings.stages)
