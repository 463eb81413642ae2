"""ETag / If-None-Match handling shared by the read routes."""

from __future__ import annotations

from fastapi import Request, Response


def not_modified(request: Request, etag: str) -> bool:
    header = request.headers.get("if-none-match")
    if not header:
        return False
    candidates = {c.strip().removeprefix("W/") for c in header.split(",")}
    return "*" in candidates or etag in candidates


def response_304(etag: str) -> Response:
    return Response(status_code=304, headers={"ETag": etag, "Cache-Control": "no-cache"})
