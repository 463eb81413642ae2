"""The wire format: the Hugging Face text-classification request and reply (as TEI's ``/predict`` answers)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from stockade.toxicity_classifier.settings import LimitSettings


class ClassifyRequest(BaseModel):
    """``{"inputs": "text"}`` or ``{"inputs": ["text", ...]}``; validate with ``context={"limits": ...}``."""

    model_config = ConfigDict(extra="forbid", strict=True)

    inputs: str | list[str] = Field(description="One text, or a batch of texts (at least one).")

    @field_validator("inputs", mode="before")
    @classmethod
    def _shape(cls, value: Any) -> Any:
        """One clear message instead of one per union member."""
        if isinstance(value, list):
            bad = next((i for i, text in enumerate(value) if not isinstance(text, str)), None)
            if bad is not None:
                raise ValueError(f"inputs[{bad}] is not a string")
        elif not isinstance(value, str):
            raise ValueError("must be a string or a list of strings")
        return value

    @field_validator("inputs")
    @classmethod
    def _bounded(cls, value: str | list[str], info: ValidationInfo) -> str | list[str]:
        limits: LimitSettings = (info.context or {}).get("limits") or LimitSettings()
        texts = [value] if isinstance(value, str) else value
        if isinstance(value, list) and not 1 <= len(value) <= limits.max_batch:
            raise ValueError(f"a batch holds 1 to {limits.max_batch} texts, not {len(value)}")
        for i, text in enumerate(texts):
            if len(text) > limits.max_chars:
                where = "the text" if isinstance(value, str) else f"text {i}"
                raise ValueError(f"{where} has {len(text)} characters; the limit is {limits.max_chars}")
        return value

    def texts(self) -> list[str]:
        return [self.inputs] if isinstance(self.inputs, str) else list(self.inputs)


class LabelScore(BaseModel):
    label: str = Field(description="toxic, offensive or non-toxic.")
    score: float = Field(ge=0, le=1, description="Probability; the scores of one text sum to 1.")


def request_schema() -> dict[str, Any]:
    """The request body for the OpenAPI document (the route parses the body itself)."""
    return {
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": ClassifyRequest.model_json_schema()}},
        }
    }
