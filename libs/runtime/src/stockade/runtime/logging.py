"""Structured JSON logging with secrets redacted, and the trace id on every line logged inside a trace.

Redaction happens in the formatter, so no handler can leak: API keys (``stk_...``), bearer tokens, passwords and
any extra field whose name looks secret are replaced by ``[REDACTED]``. :class:`TraceContextFilter` (on the
handler :func:`configure_logging` installs) adds ``trace_id`` and ``span_id`` of the current OpenTelemetry span:
a request's lines, or a NATS message's handling, can be found by the ``traceparent`` it came with.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from datetime import UTC, datetime
from typing import IO, Any

from opentelemetry import trace

_SECRET_KEYS = re.compile(r"(api[_-]?key|password|passwd|secret|token|authorization|cookie|session)", re.I)
_SECRET_VALUES = [
    re.compile(r"stk_[A-Za-z0-9_]{8,}"),
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(r"(?i)((?:api_key|password|token|secret)=)[^&\s\"']+"),
    re.compile(r"(?i)(x-api-key['\"]?\s*[:=]\s*['\"]?)[^\s'\",}]+"),
    re.compile(r"(nats://[^:/@\s]+:)[^@\s]+(@)"),
    re.compile(r"(postgres(?:ql)?(?:\+asyncpg)?://[^:/@\s]+:)[^@\s]+(@)"),
]
REDACTED = "[REDACTED]"
_STD_ATTRS = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "color_message",
}


def redact(text: str) -> str:
    """Remove anything that looks like a credential from ``text``."""
    for pattern in _SECRET_VALUES:
        if pattern.groups == 0:
            text = pattern.sub(REDACTED, text)
        elif pattern.groups == 1:
            text = pattern.sub(lambda m: m.group(1) + REDACTED, text)
        else:
            text = pattern.sub(lambda m: m.group(1) + REDACTED + m.group(2), text)
    return text


def _clean(key: str, value: Any) -> Any:
    if _SECRET_KEYS.search(key):
        return REDACTED
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: _clean(str(k), v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(key, v) for v in value]
    if isinstance(value, int | float | bool) or value is None:
        return value
    return redact(str(value))


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, service, extras, exception."""

    def __init__(self, service: str = "stockade") -> None:
        super().__init__()
        self.service = service

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "service": self.service,
            "msg": redact(record.getMessage()),
        }
        for key, value in vars(record).items():
            if key not in _STD_ATTRS and not key.startswith("_"):
                out[key] = _clean(key, value)
        if record.exc_info:
            out["exc"] = redact(self.formatException(record.exc_info))
        return json.dumps(out, default=str)


class RedactingFormatter(logging.Formatter):
    """Human-readable lines, same redaction (and ``trace=<id>`` at the end inside a trace)."""

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        trace_id = getattr(record, "trace_id", None)
        return redact(f"{line} trace={trace_id}" if trace_id else line)


class TraceContextFilter(logging.Filter):
    """Adds ``trace_id`` (32 hex digits) and ``span_id`` of the current span to a record, when there is one."""

    def filter(self, record: logging.LogRecord) -> bool:
        ctx = trace.get_current_span().get_span_context()
        if ctx.is_valid:
            record.trace_id = format(ctx.trace_id, "032x")
            record.span_id = format(ctx.span_id, "016x")
        return True


def configure_logging(
    service: str, level: str = "INFO", json_format: bool = True, *, stream: IO[str] | None = None
) -> None:
    """Install one handler on the root logger (idempotent), writing to ``stream`` (default: stderr)."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.addFilter(TraceContextFilter())
    handler.setFormatter(
        JsonFormatter(service)
        if json_format
        else RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    )
    root = logging.getLogger()
    for old in list(root.handlers):
        if getattr(old, "_stockade", False):
            root.removeHandler(old)
    handler._stockade = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level.upper())
    # uvicorn's access log would print query strings (api_key=...): route it through our redaction.
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        lg = logging.getLogger(name)
        lg.handlers = []
        lg.propagate = True
