"""Prometheus metrics every service shares (``prometheus-client``, its process-wide default registry).

:func:`stockade.runtime.observability.install_observability` serves them on ``GET /metrics`` of each HTTP
service (the trust-broker, which has no HTTP API, on its own small listener: :class:`MetricsServer`). A service's
own metrics (check decisions, trust decisions) are defined in that service and land in the same registry.

Labels are bounded: HTTP requests are labelled by route template (``/prompts/{name}``), never the raw path, and
an unmatched path counts as ``<unmatched>``; methods outside the standard ones count as ``OTHER``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator

import uvicorn
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, Counter, Gauge, Histogram, generate_latest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from stockade.runtime.shutdown import finish_within

log = logging.getLogger(__name__)

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

HTTP_REQUEST_SECONDS = Histogram(
    "stockade_http_request_duration_seconds",
    "HTTP requests by route template, method and status: latency (the _count series is the request rate).",
    ["service", "method", "route", "status"],
    buckets=LATENCY_BUCKETS,
)
HTTP_IN_FLIGHT = Gauge("stockade_http_requests_in_flight", "HTTP requests being answered now.", ["service"])

OUTBOX_PENDING = Gauge(
    "stockade_outbox_pending_events",
    "Outbox rows committed but not yet relayed to JetStream (sampled by the relay).",
    ["table"],
)
OUTBOX_PUBLISHED = Counter(
    "stockade_outbox_published_events", "Outbox events published to JetStream by this process.", ["table"]
)
OUTBOX_FAILURES = Counter(
    "stockade_outbox_publish_failures", "Outbox publish attempts that failed (the row waits).", ["table"]
)

CONSUMER_PENDING = Gauge(
    "stockade_jetstream_consumer_pending_messages",
    "Messages of a durable JetStream consumer not yet delivered (num_pending: the consumer's lag), sampled.",
    ["stream", "consumer"],
)
CONSUMER_ACK_PENDING = Gauge(
    "stockade_jetstream_consumer_ack_pending_messages",
    "Messages delivered to a durable JetStream consumer and not yet acknowledged, sampled.",
    ["stream", "consumer"],
)
STREAM_MESSAGES = Gauge(
    "stockade_jetstream_stream_messages", "Messages stored in a JetStream stream, sampled.", ["stream"]
)
DEAD_LETTERS = Counter(
    "stockade_dead_letters", "Events this process sent to a dead-letter stream.", ["stream"]
)


def exported_names() -> set[str]:
    """Every series name the registry can export now (``_total``, ``_bucket``, ``_count``, ``_sum`` included),
    whether or not a labelled metric has a child yet."""
    suffixes = {
        "counter": ("_total",),
        "histogram": ("_bucket", "_count", "_sum"),
        "summary": ("_count", "_sum", ""),
        "gauge": ("",),
        "info": ("_info",),
        "stateset": ("",),
        "enum": ("",),
        "unknown": ("",),
    }
    names: set[str] = set()
    for family in REGISTRY.collect():
        names.update(family.name + suffix for suffix in suffixes.get(family.type, ("",)))
        names.update(sample.name for sample in family.samples)
    return names


async def metrics_endpoint() -> Response:
    return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)


async def _metrics_route(_: Request) -> Response:
    return await metrics_endpoint()


class _Server(uvicorn.Server):
    """uvicorn inside a loop that owns the stop signals: it must not replace their handlers."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class MetricsServer:
    """``/metrics`` and ``/healthz`` on their own listener, for a process with no HTTP API (the trust-broker).

    Runs uvicorn inside the caller's event loop; ``start()`` returns once it listens (``port`` 0 picks one:
    read :attr:`port`), ``stop()`` ends it.
    """

    def __init__(self, host: str, port: int, service: str) -> None:
        async def healthz(_: Request) -> Response:
            return JSONResponse({"status": "ok", "service": service})

        app = Starlette(routes=[Route("/metrics", _metrics_route), Route("/healthz", healthz)])
        config = uvicorn.Config(app, host=host, port=port, log_config=None, access_log=False, lifespan="off")
        self._server = _Server(config)
        self._task: asyncio.Task[None] | None = None
        self.port = port

    async def start(self) -> None:
        self._task = asyncio.create_task(self._server.serve(), name="metrics-server")
        while not self._server.started:
            if self._task.done():
                self._task.result()  # raises the bind error
                raise RuntimeError("metrics server stopped before it listened")
            await asyncio.sleep(0.01)
        sockets = [s for server in self._server.servers for s in server.sockets]
        if sockets:
            self.port = int(sockets[0].getsockname()[1])
        log.info("metrics on port %d", self.port)

    async def stop(self) -> None:
        if self._task is None:
            return
        self._server.should_exit = True
        await finish_within(self._task, "metrics server", 5.0, service="metrics")
        self._task = None
