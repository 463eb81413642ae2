"""Security headers on every response of every Stockade HTTP service: one pure ASGI middleware.

The defaults suit an API whose answers no browser should render or run: no content sniffing, a content security
policy that allows nothing and sandboxes the document, no framing, no referrer (keys travel in query strings on
the spec's read endpoint) and no cross-origin embedding. A service with pages of its own (model-api's console)
passes its own policy. A header a route sets itself wins (the skill files' attachment headers).

Over https (the connection's scheme, or X-Forwarded-Proto from a trusted proxy: ``http.proxy_headers``) the
answer also carries ``Strict-Transport-Security``; over plain http it never does (browsers ignore it there, and
``stockade up`` serves plain http).

FastAPI's interactive docs pages (``/docs``, ``/redoc``) load their script from a CDN, so they get every header
except the content security policy.
"""

from __future__ import annotations

from collections.abc import Mapping

from fastapi import FastAPI
from starlette.types import ASGIApp, Message, Receive, Scope, Send

API_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'; sandbox"
CSP = "Content-Security-Policy"
HSTS = "Strict-Transport-Security"
DEFAULT_HSTS_MAX_AGE_S = 365 * 24 * 3600
DEFAULT_HEADERS: dict[str, str] = {
    "X-Content-Type-Options": "nosniff",
    CSP: API_CSP,
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Resource-Policy": "same-origin",
}

RawHeaders = list[tuple[bytes, bytes]]


def _raw(headers: Mapping[str, str]) -> RawHeaders:
    return [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers.items()]


class SecurityHeadersMiddleware:
    """Adds ``headers`` to every HTTP response that does not set them itself."""

    def __init__(
        self, app: ASGIApp, headers: Mapping[str, str], csp_exempt_paths: frozenset[str], hsts_max_age_s: int
    ) -> None:
        self.app = app
        self._headers = _raw(headers)
        self._without_csp = _raw({k: v for k, v in headers.items() if k.lower() != CSP.lower()})
        self._csp_exempt = csp_exempt_paths
        self._hsts = _raw({HSTS: f"max-age={hsts_max_age_s}"}) if hsts_max_age_s > 0 else []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        wanted = self._without_csp if scope["path"] in self._csp_exempt else self._headers
        if scope.get("scheme") == "https" and self._hsts:
            wanted = wanted + self._hsts

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                own: RawHeaders = list(message.get("headers", []))
                present = {name.lower() for name, _ in own}
                message["headers"] = own + [(n, v) for n, v in wanted if n not in present]
            await send(message)

        await self.app(scope, receive, send_with_headers)


def install_security_headers(
    app: FastAPI,
    overrides: Mapping[str, str | None] | None = None,
    *,
    hsts_max_age_s: int = DEFAULT_HSTS_MAX_AGE_S,
) -> None:
    """Add the middleware to ``app`` with :data:`DEFAULT_HEADERS`; ``overrides`` replaces a header's value, or
    drops it when the value is None. ``hsts_max_age_s`` (0: none) is the Strict-Transport-Security max-age of
    answers over https (``http.hsts_max_age_s`` of the service's settings)."""
    headers = dict(DEFAULT_HEADERS)
    for name, value in (overrides or {}).items():
        headers.pop(name, None)
        if value is not None:
            headers[name] = value
    docs = frozenset(p for p in (app.docs_url, app.redoc_url, app.swagger_ui_oauth2_redirect_url) if p)
    app.add_middleware(
        SecurityHeadersMiddleware, headers=headers, csp_exempt_paths=docs, hsts_max_age_s=hsts_max_age_s
    )
