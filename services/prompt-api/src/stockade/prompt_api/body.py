"""Request bodies: the size limit before parsing (413), then JSON and the model (422)."""

from __future__ import annotations

import json
from typing import TypeVar

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError

from stockade.prompt_api.errors import BodyTooLarge
from stockade.runtime.storable import unstorable_at

M = TypeVar("M", bound=BaseModel)


async def read_limited(request: Request, limit: int) -> bytes:
    """The body, refusing early: on Content-Length, and while streaming (chunked uploads)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(f"request body is {declared} bytes; the limit is {limit}")
    chunks: list[bytes] = []
    received = 0
    async for chunk in request.stream():
        received += len(chunk)
        if received > limit:
            raise BodyTooLarge(f"request body is over the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


async def parse_body(request: Request, model: type[M], limit: int) -> M:
    raw = await read_limited(request, limit)
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RequestValidationError(
            [{"loc": ("body",), "msg": f"body is not valid JSON ({exc})", "type": "json_invalid"}]
        ) from None
    except RecursionError:
        raise RequestValidationError(
            [{"loc": ("body",), "msg": "body is nested too deeply", "type": "json_invalid"}]
        ) from None
    where = unstorable_at(data)
    if where is not None:
        raise RequestValidationError(
            [
                {
                    "loc": ("body", *where.split(".")) if where else ("body",),
                    "msg": "contains a lone surrogate (\\ud800-\\udfff), which is not UTF-8",
                    "type": "string_unicode",
                }
            ]
        )
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise RequestValidationError(exc.errors(include_url=False)) from None
