"""Storage of guardrail run data in the platform backend (spec 1 "Storage", 3 "Guardrail run lifecycle", 4.3, 6).

``GuardrailsStorageHook`` buffers a run's events in memory; ``end_run()`` sends them through
``BackendGuardrailSink`` to guardrail-ingest. Everything here works with no server while storage is disabled.
"""

from stockade.contracts.ingest_wire import (
    DB_TYPES,
    MAX_EVENTS_PER_BATCH,
    BatchAccepted,
    DbTypeReply,
    GuardrailBatch,
    RunInfo,
    WireEvent,
)
from stockade.guardrails.events import TeeRecorder
from stockade.guardrails.storage.config import StorageConfig
from stockade.guardrails.storage.context import ENV_VARS, RunLinks
from stockade.guardrails.storage.hook import GuardrailsStorageHook
from stockade.guardrails.storage.result import FlushResult, FlushStatus, SendOutcome
from stockade.guardrails.storage.sink import BackendGuardrailSink

__all__ = [
    "DB_TYPES",
    "ENV_VARS",
    "MAX_EVENTS_PER_BATCH",
    "BackendGuardrailSink",
    "BatchAccepted",
    "DbTypeReply",
    "FlushResult",
    "FlushStatus",
    "GuardrailBatch",
    "GuardrailsStorageHook",
    "RunInfo",
    "RunLinks",
    "SendOutcome",
    "StorageConfig",
    "TeeRecorder",
    "WireEvent",
]
