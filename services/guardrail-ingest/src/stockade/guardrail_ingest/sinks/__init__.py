"""Event stores of guardrail-ingest; :func:`build_sink` picks one from the settings."""

from __future__ import annotations

from stockade.guardrail_ingest.settings import SinkSettings
from stockade.guardrail_ingest.sinks.base import EventSink, SinkError, WriteOutcome


def build_sink(settings: SinkSettings, kind: str | None = None) -> EventSink:
    """Construct (not connect) the sink of store ``kind`` (default ``settings.kind``); the client libraries are
    imported only here."""
    kind = kind or settings.kind
    if kind == "mongodb":
        from stockade.guardrail_ingest.sinks.mongodb import MongoSink

        return MongoSink(str(settings.resolved_url(kind)), settings.table, timeout_s=settings.timeout_s)
    if kind == "dynamodb":
        from stockade.guardrail_ingest.sinks.dynamodb import DynamoSink

        return DynamoSink(
            settings.resolved_url(kind),
            settings.table,
            region=settings.region,
            timeout_s=settings.timeout_s,
            conditional=settings.dynamodb_write == "conditional",
        )
    if kind != "clickhouse":
        raise ValueError(f"unknown store {kind!r}")
    from stockade.guardrail_ingest.sinks.clickhouse import ClickHouseSink

    return ClickHouseSink(str(settings.resolved_url(kind)), settings.table, timeout_s=settings.timeout_s)


__all__ = ["EventSink", "SinkError", "WriteOutcome", "build_sink"]
