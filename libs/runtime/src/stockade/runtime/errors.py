"""The one JSON error shape of every Stockade HTTP service: ``{"error": {"code": ..., "message": ...}}``.

The OpenAPI document says so too: :func:`install_error_handlers` makes every 422 refer to :class:`ErrorBody`
(not FastAPI's ``HTTPValidationError``, which the services never send), and routes document their other error
statuses with :func:`error_responses`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException


class ErrorDetail(BaseModel):
    code: str = Field(description="Stable machine-readable code, e.g. unauthorized, invalid_request.")
    message: str = Field(description="Human-readable explanation.")
    details: dict[str, Any] | None = Field(default=None, description="Extra fields of some errors.")


class ErrorBody(BaseModel):
    """The body of every error response."""

    error: ErrorDetail


def error_responses(described: Mapping[int, str]) -> dict[int | str, dict[str, Any]]:
    """``responses=`` of a route: each status with its description and the house error body."""
    return {status: {"model": ErrorBody, "description": text} for status, text in described.items()}


def error_body(code: str, message: str, **details: Any) -> dict[str, Any]:
    err: dict[str, Any] = {"code": code, "message": message}
    if details:
        err["details"] = details
    return {"error": err}


def error_response(status: int, code: str, message: str, **details: Any) -> JSONResponse:
    return JSONResponse(error_body(code, message, **details), status_code=status)


_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
    429: "rate_limited",
    503: "unavailable",
}


def install_error_handlers(app: FastAPI) -> None:
    """Map framework errors to the house shape; never leak a stack trace (500 says only 'internal')."""
    _document_house_errors(app)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _CODES.get(exc.status_code, "error")
        message = exc.detail if isinstance(exc.detail, str) else code.replace("_", " ")
        return JSONResponse(error_body(code, message), status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
        problems = []
        for err in exc.errors():
            loc = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
            problems.append({"field": loc, "problem": err.get("msg", "invalid")})
        summary = "; ".join(f"{p['field'] or 'body'}: {p['problem']}" for p in problems[:5])
        return JSONResponse(
            error_body("invalid_request", f"invalid request: {summary}", problems=problems), status_code=422
        )

    @app.exception_handler(Exception)
    async def internal_error(_: Request, exc: Exception) -> JSONResponse:
        import logging

        logging.getLogger("stockade.http").exception("unhandled error: %s", type(exc).__name__)
        return JSONResponse(error_body("internal", "internal error"), status_code=500)


def _document_house_errors(app: FastAPI) -> None:
    """Make ``app.openapi()`` describe the 422 body the validation handler above really sends."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        spec = build()
        schemas = spec.setdefault("components", {}).setdefault("schemas", {})
        body = ErrorBody.model_json_schema(ref_template="#/components/schemas/{model}")
        schemas.update(body.pop("$defs", {}))
        schemas.setdefault("ErrorBody", body)
        ref = {"$ref": "#/components/schemas/ErrorBody"}
        for operations in spec.get("paths", {}).values():
            for operation in operations.values():
                invalid = operation.get("responses", {}).get("422")
                if invalid is not None:
                    invalid["content"] = {"application/json": {"schema": ref}}
        for name in ("HTTPValidationError", "ValidationError"):  # FastAPI's, now unreferenced
            if f'"#/components/schemas/{name}"' not in json.dumps(spec):
                schemas.pop(name, None)
        app.openapi_schema = spec
        return spec

    app.openapi = openapi  # type: ignore[method-assign]
