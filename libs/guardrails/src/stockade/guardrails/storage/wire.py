"""Moved to :mod:`stockade.contracts.ingest_wire` (the body of ``POST /api/v1/guardrails/{db_type}``); the names
stay importable from here for the library's users."""

from stockade.contracts.ingest_wire import (
    DB_TYPES,
    MAX_EVENTS_PER_BATCH,
    BatchAccepted,
    DbTypeReply,
    GuardrailBatch,
    RunInfo,
    WireEvent,
)

__all__ = [
    "DB_TYPES",
    "MAX_EVENTS_PER_BATCH",
    "BatchAccepted",
    "DbTypeReply",
    "GuardrailBatch",
    "RunInfo",
    "WireEvent",
]
