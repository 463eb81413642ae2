"""W3C trace context with OpenTelemetry: one tracer provider per process, ``traceparent`` across HTTP and NATS.

Exporting is off by default and turned on by the standard variables: ``OTEL_TRACES_EXPORTER=otlp`` (needs the
``otlp`` extra of stockade-runtime: ``opentelemetry-exporter-otlp-proto-http``) or ``console``, or an
``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``; ``OTEL_TRACES_SAMPLER``,
``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES`` apply as usual; ``OTEL_SDK_DISABLED=true`` turns tracing
off (no spans and no new trace ids; a caller's ``traceparent`` still passes through unchanged).

Without an exporter no SDK is installed and it stays cheap: :func:`start_span` makes a span that records nothing
(about 1 us), with a fresh trace id for a request that brought none (for its log lines and the messages it
publishes), or the caller's trace id and flags (its sampling decision goes on downstream) and a new span id.

On NATS the context travels in the message headers: :func:`inject` adds ``traceparent`` (and ``tracestate``) to
the headers a publisher sends, :func:`consumer_span` continues the trace of a message being handled. An outbox
event stores the ``traceparent`` of the request that committed it, so the relay publishes it later unchanged.
"""

from __future__ import annotations

import logging
import os
import random
from collections.abc import Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.trace import NonRecordingSpan, Span, SpanContext, SpanKind, TraceFlags

from stockade.contracts.headers import TRACEPARENT

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export import SpanExporter

log = logging.getLogger(__name__)

_Headers = TypeVar("_Headers", bound=MutableMapping[str, str])
_configured: str | None = None
_exporting = False
_disabled = False
_random = random.Random()  # ids need uniqueness, not secrecy (the SDK uses random too)
os.register_at_fork(after_in_child=_random.seed)  # forked workers must not repeat each other's ids


def configure_tracing(service: str) -> None:
    """Install the process's tracer provider once (the first service that asks names it); later calls do
    nothing. Exporter and sampler from the standard ``OTEL_*`` variables (module docstring)."""
    global _configured, _exporting, _disabled
    if _configured is not None:
        return
    _configured = service
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        _disabled = True
        return
    if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        _exporting = True  # the embedding process installed its own provider: use it
        return
    exporter = _exporter()
    if exporter is None:
        return  # start_span makes non-recording spans itself: no SDK, no per-span sampling
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME") or service})
    provider = TracerProvider(resource=resource)  # sampler from OTEL_TRACES_SAMPLER (default: parent, on)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    _exporting = True


def start_span(name: str, parent: Context | None, kind: SpanKind) -> Span:
    """A span continuing ``parent`` (a context :func:`extract` returned) or starting a trace. Exporting: the
    tracer provider's. Not exporting: a span that records nothing, with the parent's trace id and flags (or a
    fresh trace id, not sampled) and a new span id. Disabled (``OTEL_SDK_DISABLED=true``): the caller's span context
    passes through, and nothing starts a trace."""
    if _exporting or _configured is None:
        return tracer().start_span(name, context=parent, kind=kind)
    if _disabled:  # no spans and no new ids; a caller's context passes through unchanged
        return trace.get_current_span(parent) if parent is not None else trace.INVALID_SPAN
    up = trace.get_current_span(parent).get_span_context() if parent is not None else None
    span_id = _random.getrandbits(64) or 1
    if up is not None and up.is_valid:
        return NonRecordingSpan(SpanContext(up.trace_id, span_id, False, up.trace_flags, up.trace_state))
    return NonRecordingSpan(
        SpanContext(_random.getrandbits(128) or 1, span_id, False, TraceFlags(TraceFlags.DEFAULT))
    )


def _exporter() -> SpanExporter | None:
    name = os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    endpoint = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get(
        "OTEL_EXPORTER_OTLP_ENDPOINT"
    )
    if name == "none" or (name == "" and not endpoint):
        return None  # the default: no exporter
    if name == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter()
    if name not in ("", "otlp"):
        log.warning(
            "OTEL_TRACES_EXPORTER=%s is not supported here (otlp, console, none): not exporting", name
        )
        return None
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError:
        log.warning(
            "OTLP trace export asked for but opentelemetry-exporter-otlp-proto-http is not installed "
            "(install stockade-runtime[otlp]): not exporting"
        )
        return None
    otlp: SpanExporter = OTLPSpanExporter()  # endpoint, headers, timeout from OTEL_EXPORTER_OTLP_*
    return otlp


def tracer() -> trace.Tracer:
    return trace.get_tracer("stockade")


def inject(headers: _Headers) -> _Headers:
    """Add the current trace context (``traceparent``, ``tracestate``) to ``headers`` and return them; no change
    outside a trace."""
    propagate.inject(headers)
    return headers


def extract(headers: Mapping[str, str] | None) -> Context | None:
    """The trace context a message or request carries, or None when it carries none."""
    if not headers or TRACEPARENT not in headers:
        return None
    return propagate.extract(headers)


def current_trace_id() -> str | None:
    """The current trace id as 32 hex digits, or None outside a trace."""
    ctx = trace.get_current_span().get_span_context()
    return format(ctx.trace_id, "032x") if ctx.is_valid else None


@contextmanager
def consumer_span(
    name: str, headers: Mapping[str, str] | None, *, always: bool = False
) -> Iterator[Span | None]:
    """Continue the trace a received message carries while handling it (log lines carry its trace id; messages
    published meanwhile carry it on). A message without ``traceparent`` starts no span unless ``always``: a hot
    consumer then pays nothing for tracing."""
    parent = extract(headers)
    if parent is None and not always:
        yield None
        return
    span = start_span(name, parent, SpanKind.CONSUMER)
    token = otel_context.attach(trace.set_span_in_context(span, parent))
    try:
        yield span
    finally:
        otel_context.detach(token)
        span.end()
