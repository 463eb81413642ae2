"""The request body: size first (413), then JSON and the model with the configured limits (422)."""

from __future__ import annotations

import json

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError

from stockade.toxicity_classifier.schemas import ClassifyRequest
from stockade.toxicity_classifier.settings import LimitSettings


class BodyTooLargeError(Exception):
    """The body is over ``limits.max_body_bytes``."""


async def read_limited(request: Request, limit: int) -> bytes:
    """The body, refused early: on Content-Length, and while streaming (chunked uploads)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BodyTooLargeError(f"request body is {declared} bytes; the limit is {limit}")
    chunks: list[bytes] = []
    received = 0
    async for chunk in request.stream():
        received += len(chunk)
        if received > limit:
            raise BodyTooLargeError(f"request body is over the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


async def parse_classify_request(request: Request, limits: LimitSettings) -> ClassifyRequest:
    raw = await read_limited(request, limits.max_body_bytes)
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise RequestValidationError(
            [{"loc": ("body",), "msg": f"body is not valid JSON ({exc})", "type": "json_invalid"}]
        ) from None
    except RecursionError:
        raise RequestValidationError(
            [{"loc": ("body",), "msg": "body is nested too deeply", "type": "json_invalid"}]
        ) from None
    try:
        return ClassifyRequest.model_validate(data, context={"limits": limits})
    except ValidationError as exc:
        raise RequestValidationError(exc.errors(include_url=False, include_input=False)) from None
