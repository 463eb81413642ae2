"""Settings of the classification check's pluggable backends: a Hugging Face sequence-classification model
(``model_path`` and ``label_map``), a remote classifier service (``remote``) and an LLM judge (``judge``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from stockade.guardrails.checks.config_base import Strict
from stockade.guardrails.llm.config import ModelConfig, Provider

ModelClass = Literal["benign", "injection", "jailbreak", "malicious"]
"""What a foreign model's label means to the check: not an attack, or one of the attack classes."""

DEFAULT_LABEL_MAP: dict[str, ModelClass] = {
    # Prompt Guard 1 and its derivatives
    "benign": "benign",
    "injection": "injection",
    "jailbreak": "jailbreak",
    # ProtectAI deberta-v3 v1/v2, and models with safe/unsafe heads
    "safe": "benign",
    "unsafe": "injection",
    "prompt_injection": "injection",
    "malicious": "injection",
    # Prompt Guard 2 (LABEL_1: malicious), PIGuard and any binary head left with generic names
    "label_0": "benign",
    "label_1": "injection",
}
"""Model label (compared case-insensitively) -> class, used for labels ``label_map`` does not name."""


class RemoteClassifierConfig(Strict):
    """``classification.remote``: a classifier hosted as a service speaking the toxicity service's wire protocol
    (``POST {"inputs": [...]}`` -> one ``[{"label", "score"}, ...]`` list per text)."""

    url: str = Field(
        default="http://127.0.0.1:8090/classify",
        min_length=1,
        description="POST endpoint of the service, e.g. http://guard.internal:8090/classify.",
    )
    api_key_env: str | None = Field(
        default=None, description="Environment variable whose value is sent as 'Authorization: Bearer <key>'."
    )
    label_map: dict[str, ModelClass] = Field(
        default_factory=dict,
        description="Service label (case-insensitive) -> benign, injection, jailbreak or malicious; labels left "
        "out use the defaults (BENIGN/INJECTION/JAILBREAK, SAFE/INJECTION, LABEL_0/LABEL_1).",
    )
    timeout_s: float = Field(default=2.0, gt=0, description="HTTP timeout of one attempt.")
    retries: int = Field(default=1, ge=0, description="Retries after a failed attempt (5xx, 429, network).")
    backoff_s: float = Field(default=0.05, ge=0, description="First retry delay; doubles per retry.")
    window_chars: int = Field(
        default=2000, ge=64, description="Characters per window sent (a long text is cut into windows)."
    )
    overlap_chars: int = Field(default=400, ge=0, description="Characters neighbouring windows share.")
    max_batch: int = Field(default=32, ge=1, description="Windows per request (the service's max_batch).")
    breaker_failures: int = Field(default=5, gt=0, description="Consecutive failures that open the circuit.")
    breaker_reset_s: float = Field(default=30.0, gt=0, description="Open time before one trial call.")

    @model_validator(mode="after")
    def _overlap(self) -> RemoteClassifierConfig:
        if self.overlap_chars >= self.window_chars:
            raise ValueError("overlap_chars must be smaller than window_chars")
        return self


JudgeAction = Literal["block", "warn", "allow"]


class JudgeModelConfig(ModelConfig):
    """The judge's model: a ``models`` entry's fields, with a default provider and model."""

    provider: Provider = Field(
        default="openai", description="openai, azure_openai, anthropic, gemini or bedrock."
    )
    model: str = Field(
        default="gpt-4o-mini",
        min_length=1,
        description="Model name; the deployment name for azure_openai, the model id for bedrock.",
    )


class JudgeConfig(Strict):
    """``classification.judge``: an LLM asked whether the text is an attack, after the classifier."""

    enabled: bool = Field(
        default=True, description="Call the judge (set false to keep the section but skip)."
    )
    model: JudgeModelConfig = Field(
        default_factory=JudgeModelConfig,
        description="The judge model: any provider LLMRails supports (openai, azure_openai, anthropic, gemini, "
        "bedrock), or an OpenAI-compatible server (provider openai with base_url), e.g. a self-hosted guard "
        "model such as Llama Guard.",
    )
    mode: Literal["always", "when_unsure"] = Field(
        default="when_unsure",
        description="always: every text (block when the classifier or the judge says attack); when_unsure: only "
        "when the classifier's score falls in band, and the judge's verdict decides there.",
    )
    band: tuple[float, float] = Field(
        default=(0.2, 0.98),
        description="when_unsure: [low, high) of the classifier's score in which the judge is asked.",
    )
    prompt: Literal["instruction", "guard_model"] = Field(
        default="instruction",
        description="instruction: the documented system prompt asking for a JSON verdict; guard_model: the text "
        "alone as the user message (a guard model such as Llama Guard brings its own template and answers "
        "'safe' or 'unsafe').",
    )
    system_prompt: str | None = Field(
        default=None, description="instruction: replaces the documented system prompt (same JSON answer)."
    )
    timeout_s: float = Field(
        default=4.0, gt=0, description="The judge call's timeout; keep it under the check's timeout_s."
    )
    max_output_tokens: int = Field(default=48, gt=0, description="Output token cap of the judge call.")
    max_chars: int = Field(
        default=8000,
        ge=200,
        description="Longest text sent; a longer one is sent as its most suspicious window (the classifier's) "
        "plus its beginning and end.",
    )
    action: Literal["block", "warn"] = Field(
        default="block", description="Action when the judge says attack."
    )
    on_unparseable: JudgeAction = Field(
        default="block", description="Action when the reply is not a verdict (fail-closed by default)."
    )

    @field_validator("band")
    @classmethod
    def _band(cls, v: tuple[float, float]) -> tuple[float, float]:
        low, high = v
        if not 0.0 <= low < high <= 1.0:
            raise ValueError("band must be [low, high] with 0 <= low < high <= 1")
        return v
