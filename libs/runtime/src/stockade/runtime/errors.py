"""The one JSON error shape of every Stockade HTTP service: ``{"error": {"code": ..., "message": ...}}``."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException


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
