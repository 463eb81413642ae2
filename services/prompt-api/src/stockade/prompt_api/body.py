"""Request bodies: the size limit before parsing (413), then JSON and the model (422)."""

from __future__ import annotations

from typing import TypeVar

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError

from stockade.prompt_api.errors import BodyTooLarge
from stockade.runtime.body import json_body, read_limited
from stockade.runtime.storable import unstorable_at

M = TypeVar("M", bound=BaseModel)


async def parse_body(request: Request, model: type[M], limit: int) -> M:
    data = json_body(await read_limited(request, limit, BodyTooLarge))
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
