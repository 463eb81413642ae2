"""Storage of guardrail run data in the platform backend (spec 1 "Storage", 3 "Guardrail run lifecycle", 4.3, 6).

``GuardrailsStorageHook`` buffers a run's events in memory; ``end_run()`` sends them through
``BackendGuardrailSink`` to guardrail-ingest. Everything here works with no server while storage is disabled.
"""

from stockade.guardrails.events import TeeRecorder
from stockade.guardrails.storage import wire
from stockade.guardrails.storage.config import StorageConfig
from stockade.guardrails.storage.context import ENV_VARS, RunLinks
from stockade.guardrails.storage.hook import GuardrailsStorageHook
from stockade.guardrails.storage.result import FlushResult, FlushStatus, SendOutcome
from stockade.guardrails.storage.sink import BackendGuardrailSink
from stockade.guardrails.storage.wire import *  # noqa: F403  (the wire names: listed once, in wire.__all__)

__all__ = [
    "ENV_VARS",
    "BackendGuardrailSink",
    "FlushResult",
    "FlushStatus",
    "GuardrailsStorageHook",
    "RunLinks",
    "SendOutcome",
    "StorageConfig",
    "TeeRecorder",
]
__all__ += wire.__all__
