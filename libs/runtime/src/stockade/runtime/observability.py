"""Metrics and trace context for an HTTP service: one pure ASGI middleware and ``GET /metrics``.

:func:`install_observability` (called by ``create_service_app`` for every HTTP service):

- each request continues the caller's ``traceparent`` (or starts a trace) on a server span that is current while
  it is answered, so its log lines and the events it publishes carry the trace id (:mod:`stockade.runtime.tracing`);
- its latency is observed in ``stockade_http_request_duration_seconds`` by route template, method and status;
- with ``log.access_log`` one access line per request (method, route, status, milliseconds, trace id);
- ``GET /metrics`` answers the Prometheus text format. It needs no credentials (a scraper has none), so in
  production keep it off the public listener: deploy/README.md ("Metrics and traces") says how.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from fastapi import FastAPI
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from stockade.runtime import tracing
from stockade.runtime.metrics import HTTP_IN_FLIGHT, HTTP_REQUEST_SECONDS, metrics_endpoint

access_log = logging.getLogger("stockade.access")

METRICS_PATH = "/metrics"
UNMATCHED = "<unmatched>"
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
_TRACE_HEADERS = (b"traceparent", b"tracestate")


def route_template(scope: Scope, root_path: str = "") -> str:
    """The template of the route that answered (``/prompts/{name}``), never the raw path (bounded labels).

    FastAPI's routes put themselves in the scope; a mount (static files) shows as its prefix + ``/{path}``
    (its ``root_path`` grew past ``root_path``, the request's before routing)."""
    path = getattr(scope.get("route"), "path", None)
    if isinstance(path, str):
        return path or "/"
    mounted = scope.get("root_path", "")
    if isinstance(mounted, str) and len(mounted) > len(root_path) and mounted.startswith(root_path):
        return mounted[len(root_path) :] + "/{path}"
    return UNMATCHED


class ObservabilityMiddleware:
    def __init__(self, app: ASGIApp, service: str, access: bool = False) -> None:
        self.app = app
        self.service = service
        self.access = access
        self._in_flight = HTTP_IN_FLIGHT.labels(service)
        self._children: dict[tuple[str, str, str], Any] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        root_path = scope.get("root_path", "")
        method = scope["method"] if scope["method"] in _METHODS else "OTHER"
        carrier = {
            name.decode("latin-1"): value.decode("latin-1")
            for name, value in scope["headers"]
            if name in _TRACE_HEADERS
        }
        parent = tracing.extract(carrier)
        span = tracing.start_span(method, parent, SpanKind.SERVER)
        token = otel_context.attach(trace.set_span_in_context(span, parent))
        status = 500

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        self._in_flight.inc()
        try:
            await self.app(scope, receive, send_status)
        finally:
            self._in_flight.dec()
            elapsed = time.perf_counter() - start
            route = route_template(scope, root_path)
            key = (method, route, str(status))
            child = self._children.get(key)
            if child is None:
                child = self._children[key] = HTTP_REQUEST_SECONDS.labels(self.service, *key)
            child.observe(elapsed)
            if span.is_recording():
                span.update_name(f"{method} {route}")
                span.set_attribute("http.request.method", method)
                span.set_attribute("http.route", route)
                span.set_attribute("http.response.status_code", status)
                if status >= 500:
                    span.set_status(Status(StatusCode.ERROR))
            if self.access:
                access_log.info(
                    "%s %s %d %.1f ms",
                    method,
                    route,
                    status,
                    elapsed * 1000,
                    extra={
                        "method": method,
                        "route": route,
                        "status": status,
                        "ms": round(elapsed * 1000, 2),
                    },
                )
            otel_context.detach(token)
            span.end()


def install_observability(app: FastAPI, service: str, *, access_log: bool = False) -> None:
    """Trace context, request metrics (and an access log line per request with ``access_log``) on every request
    of ``app``, and ``GET /metrics`` (outside the OpenAPI document, no credentials)."""
    tracing.configure_tracing(service)
    app.add_api_route(METRICS_PATH, metrics_endpoint, methods=["GET"], include_in_schema=False)
    app.add_middleware(ObservabilityMiddleware, service=service, access=access_log)
