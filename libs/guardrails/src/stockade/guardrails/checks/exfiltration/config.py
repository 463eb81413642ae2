"""``guardrails.checks.exfiltration``: the settings of the output-only exfiltration check (secrets, bulk
personal data, abnormal patterns, one risk score)."""

from __future__ import annotations

import difflib
import re

from pydantic import Field, field_validator

from stockade.guardrails.checks.config_base import CheckSettings, Stage, Strict


class SecretsDetectorConfig(Strict):
    enabled: bool = Field(default=True, description="Look for credentials.")
    detect_secrets: bool = Field(
        default=True, description="Also run detect-secrets plugins ('secrets' extra)."
    )
    entropy_threshold: float = Field(default=3.5, ge=0, description="Shannon entropy (bits/char) of a token.")
    min_token_length: int = Field(
        default=12, ge=4, description="Shortest credential-context token considered."
    )
    disabled_rules: list[str] = Field(
        default_factory=list,
        description="Rules not reported, by the name findings carry (uuid, url_credentials, "
        "credential_in_context, detect_secrets:<type>...).",
    )
    allow_values: list[str] = Field(
        default_factory=list,
        description="Regular expressions; a value matching one in full is not reported (your test keys).",
    )
    report_weak_passwords: bool = Field(
        default=True,
        description="Report a password made of password words and digits (password = 'password123', "
        "user:admin2024@host): a weak password in a user's config. Off: taken for a documentation stand-in.",
    )

    @field_validator("disabled_rules")
    @classmethod
    def _known_rules(cls, v: list[str]) -> list[str]:
        from stockade.guardrails.checks.exfiltration.rules import RULE_NAMES

        for rule in v:
            if rule not in RULE_NAMES and not rule.startswith("detect_secrets:"):
                close = difflib.get_close_matches(rule, RULE_NAMES, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise ValueError(
                    f"unknown secret rule {rule!r}{hint}; a rule is named as the 'type' of its findings"
                )
        return v

    @field_validator("allow_values")
    @classmethod
    def _compiles(cls, v: list[str]) -> list[str]:
        for pattern in v:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"{pattern!r} is not a regular expression: {exc}") from exc
        return v


class BulkPiiDetectorConfig(Strict):
    enabled: bool = Field(default=True, description="Flag outputs carrying many personal-data values.")
    min_entities: int = Field(
        default=5, ge=1, description="Values (emails, phones, cards...) that make bulk."
    )


class AbnormalPatternsConfig(Strict):
    enabled: bool = Field(default=True, description="Flag encoded blobs, data in URLs, very long output.")
    base64_min_length: int = Field(default=120, ge=16, description="Shortest base64 run flagged.")
    hex_min_length: int = Field(default=64, ge=16, description="Shortest hex run flagged.")
    url_param_min_length: int = Field(default=48, ge=8, description="Longest harmless URL query value.")
    max_output_chars: int = Field(default=20_000, gt=0, description="Output longer than this is abnormal.")


class ExfiltrationConfig(CheckSettings):
    """``guardrails.checks.exfiltration``: output-only; secrets, bulk PII, abnormal patterns -> one risk."""

    stages: list[Stage] = Field(default_factory=lambda: [Stage.OUTPUT], description="Output only.")
    secrets: SecretsDetectorConfig = Field(default_factory=SecretsDetectorConfig, description="Secrets.")
    bulk_pii: BulkPiiDetectorConfig = Field(default_factory=BulkPiiDetectorConfig, description="Bulk PII.")
    patterns: AbnormalPatternsConfig = Field(default_factory=AbnormalPatternsConfig, description="Patterns.")
    warn_threshold: float = Field(default=0.3, ge=0, le=1, description="Risk at which findings are masked.")
    block_threshold: float = Field(
        default=0.8, ge=0, le=1, description="Risk at which the output is blocked."
    )

    @field_validator("stages")
    @classmethod
    def _output_only(cls, v: list[Stage]) -> list[Stage]:
        if Stage.INPUT in v or Stage.CONTEXT in v:
            raise ValueError("exfiltration detection is output-only")
        return v
