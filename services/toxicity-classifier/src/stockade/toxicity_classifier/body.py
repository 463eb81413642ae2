"""The request body: size first (413), then JSON and the model with the configured limits (422)."""

from __future__ import annotations

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError

from stockade.runtime.body import BodyTooLargeError, json_body, read_limited
from stockade.toxicity_classifier.schemas import ClassifyRequest
from stockade.toxicity_classifier.settings import LimitSettings

__all__ = ["BodyTooLargeError", "parse_classify_request"]


async def parse_classify_request(request: Request, limits: LimitSettings) -> ClassifyRequest:
    data = json_body(await read_limited(request, limits.max_body_bytes))
    try:
        return ClassifyRequest.model_validate(data, context={"limits": limits})
    except ValidationError as exc:
        raise RequestValidationError(exc.errors(include_url=False, include_input=False)) from None
