"""``guardrails.checks.classification``: the attack classifier's settings (and semantic routing's)."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import Field, model_validator

from stockade.guardrails.checks.classification.backend_config import (
    JudgeConfig,
    ModelClass,
    RemoteClassifierConfig,
)
from stockade.guardrails.checks.config_base import CheckSettings, Stage, Strict


class EncoderType(StrEnum):
    """Embedding encoders for content classification (``ENCODER_TYPE``)."""

    MINILM = "minilm"
    SENTENCE_TRANSFORMERS = "sentence_transformers"
    OPENAI = "openai"


class RouteConfig(Strict):
    utterances: list[str] = Field(default_factory=list, description="Example utterances of the route.")
    threshold: float = Field(default=0.5, ge=-1, le=1, description="Cosine similarity that triggers it.")
    action: str = Field(default="block", description="warn or block.")


class OpenAIEncoderConfig(Strict):
    base_url: str = Field(default="http://127.0.0.1:8000/v1", description="OpenAI-compatible API base URL.")
    model: str = Field(default="text-embedding-3-small", description="Embedding model name.")
    api_key_env: str = Field(default="OPENAI_API_KEY", description="Environment variable holding the key.")
    timeout_s: float = Field(default=10.0, gt=0, description="HTTP timeout.")


AttackClass = Literal["jailbreak", "injection", "malicious"]


class ClassificationConfig(CheckSettings):
    """``guardrails.checks.classification``: jailbreak / injection / malicious detection.

    ``method: model`` (the default with the ``ml`` extra) runs the trained classifier shipped in
    stockade-guardrails-model; ``method: routes`` is semantic routing with an embedding encoder
    (``encoder_type`` / ``ENCODER_TYPE``) over built-in, configured or fitted routes."""

    method: Literal["model", "routes"] | None = Field(
        default=None,
        description="model (trained classifier) or routes (semantic routing); None: routes when routes, "
        "fitted_path, encoder_type or the ENCODER_TYPE environment variable is set, else model.",
    )
    classifier_path: str | None = Field(
        default=None,
        description="method model: a model directory (model.onnx, tokenizer.json, screener.npz, "
        "classifier.json); None: the one in the stockade-guardrails-model package.",
    )
    preset: Literal["strict", "balanced", "permissive"] | None = Field(
        default=None,
        description="method model, shipped classifier: operating point (README 'Operating points'): strict "
        "catches more and flags more ordinary text, permissive the reverse; None: the model's default "
        "(balanced). The thresholds grow with a text's window count so long documents are flagged no more "
        "often than short texts. Setting thresholds or context_thresholds replaces it with per-class "
        "thresholds.",
    )
    thresholds: dict[AttackClass, float] = Field(
        default_factory=dict,
        description="method model: probability at which a class fires on user input (stage input), per "
        "class; a class left out uses the shipped model's tuned threshold.",
    )
    context_thresholds: dict[AttackClass, float] = Field(
        default_factory=dict,
        description="method model: the same for stage context (documents, tool output, e-mails, web pages); "
        "a class left out uses its input threshold.",
    )
    actions: dict[AttackClass, Literal["block", "warn", "allow"]] = Field(
        default_factory=dict, description="method model: action per class when it fires (default block)."
    )
    max_windows: int = Field(
        default=1024,
        ge=1,
        description="method model: the most windows one text may have (the shipped model's 64-token windows: "
        "1,024 is about 160 kB of English); a longer text is not judged and the check fails (a block when "
        "fail-closed).",
    )
    model_windows: int | None = Field(
        default=None,
        ge=2,
        description="method model: windows the transformer reads per text; beyond it the screener picks "
        "the first, the last and the most suspicious. None: the model's own setting (16).",
    )

    library: bool = Field(
        default=False,
        description="method model, shipped classifier: also match the sentences the model reads against the "
        "known-attack library shipped beside it (README 'Known-attack library'); a match at or above its "
        "calibrated similarity flags the text and names the matched entry's source. Off by default: measured "
        "across sources it did not add recall at the same false-positive budget.",
    )

    stages: list[Stage] = Field(
        default_factory=lambda: [Stage.INPUT, Stage.CONTEXT], description="Rails it runs on."
    )
    encoder_type: EncoderType | None = Field(
        default=None,
        description="minilm, sentence_transformers or openai; None: env ENCODER_TYPE, else minilm.",
    )
    model_path: str = Field(
        default="",
        description="method model: a Hugging Face sequence-classification model directory (config.json with "
        "id2label, tokenizer.json, model.onnx; see `stockade convert-classifier`) run with onnxruntime instead "
        "of the shipped classifier. method routes with encoder_type sentence_transformers: that encoder's model.",
    )
    label_map: dict[str, ModelClass] = Field(
        default_factory=dict,
        description="model_path: model label (case-insensitive) -> benign, injection, jailbreak or malicious; "
        "labels left out use the model directory's stockade.json, then the defaults (BENIGN/INJECTION/"
        "JAILBREAK, SAFE/INJECTION, LABEL_0/LABEL_1).",
    )
    remote: RemoteClassifierConfig | None = Field(
        default=None,
        description="method model: classify through a remote service (the toxicity service's wire protocol) "
        "instead of a local model.",
    )
    judge: JudgeConfig | None = Field(
        default=None, description="An LLM judge after the classifier (always, or when its score is unsure)."
    )
    max_seq_length: int = Field(default=128, ge=16, description="Tokens the local encoders read per text.")
    runtime: Literal["auto", "onnx", "torch"] = Field(
        default="auto",
        description="Local encoders: onnx (onnxruntime, exported once and cached), torch, or auto (onnx when "
        "onnxruntime is installed and the model is mean-pooled, else torch).",
    )
    threads: int = Field(default=1, ge=1, description="CPU threads per local encode (onnx runtime).")
    int8: bool = Field(
        default=True,
        description="onnx runtime: run a dynamically int8-quantised copy of the model (about 1.5x faster on "
        "CPU; vectors differ slightly from the fp32/torch model's, so fit routes with the same setting).",
    )
    openai: OpenAIEncoderConfig = Field(default_factory=OpenAIEncoderConfig, description="Endpoint encoder.")
    routes: dict[str, RouteConfig] | None = Field(
        default=None, description="Routes; None: the built-in jailbreak, malicious and injection routes."
    )
    fitted_path: str | None = Field(
        default=None,
        description="JSON written by the fit step (routes and tuned thresholds); overrides routes.",
    )
    prefilter: bool = Field(
        default=True,
        description="Let a static-embedding first stage decide the clear cases when the fitted routes carry "
        "prefilter bands (local encoders with onnxruntime only); texts in its uncertain band, and every text "
        "when off, go to the full encoder.",
    )

    @model_validator(mode="after")
    def _one_model(self) -> ClassificationConfig:
        routing = self.method == "routes" or (
            self.method is None
            and (self.routes is not None or bool(self.fitted_path) or self.encoder_type is not None)
        )
        hf = bool(self.model_path) and not routing
        if self.remote is not None and (self.classifier_path is not None or hf):
            raise ValueError(
                "remote: set either remote or a local model (classifier_path, model_path), not both"
            )
        if self.classifier_path is not None and hf:
            raise ValueError("model_path: set either classifier_path or model_path, not both")
        return self
