"""Request bodies read by hand (services that need the size limit before FastAPI parses anything): the body is
refused over its limit (the caller answers 413), then decoded as JSON (422 through RequestValidationError)."""

from __future__ import annotations

import json
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel


class BodyTooLargeError(Exception):
    """The request body is over the service's limit (answer 413)."""


async def read_limited(request: Request, limit: int, error: type[Exception] = BodyTooLargeError) -> bytes:
    """The body, refused early: on Content-Length, and while streaming (chunked uploads). ``error`` is the
    exception raised over the limit (a service may map its own class to 413)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise error(f"request body is {declared} bytes; the limit is {limit}")
    chunks: list[bytes] = []
    received = 0
    async for chunk in request.stream():
        received += len(chunk)
        if received > limit:
            raise error(f"request body is over the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def json_body(raw: bytes) -> Any:
    """``raw`` as JSON, or a RequestValidationError (422) saying why not."""
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise RequestValidationError(
            [{"loc": ("body",), "msg": f"body is not valid JSON ({exc})", "type": "json_invalid"}]
        ) from None
    except RecursionError:
        raise RequestValidationError(
            [{"loc": ("body",), "msg": "body is nested too deeply", "type": "json_invalid"}]
        ) from None


def documented_body(model: type[BaseModel]) -> dict[str, Any]:
    """``openapi_extra=`` of a route that reads its body by hand: the JSON body ``model`` describes, with its
    ``$defs`` inlined (FastAPI registers no model for a body it does not parse), so /docs and API fuzzers see
    the real body."""
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return inline(dict(defs[node["$ref"].rsplit("/", 1)[-1]]))
            return {key: inline(value) for key, value in node.items()}
        if isinstance(node, list):
            return [inline(value) for value in node]
        return node

    return {"requestBody": {"required": True, "content": {"application/json": {"schema": inline(schema)}}}}
