"""The run store's readers: the one place that reads stored events back (``guardrail.cmd.read_runs.v2``).

guardrail-ingest writes the run store (:mod:`stockade.guardrail_ingest.sinks`) and owns its record schema
(:mod:`stockade.guardrail_ingest.records`); these readers are the only code that reads it, one per store kind
(ClickHouse, a server or chdb; MongoDB; DynamoDB). Each reader method takes the caller's
:class:`~stockade.contracts.run_store.RunScope` first, and turns it into a ``project_id IN (...)`` condition (a
bound parameter) in the one function of that reader that builds its filter, so no read sees another project.
model-api's console reaches them only through the typed commands of :mod:`stockade.contracts.run_store`,
answered by :mod:`stockade.guardrail_ingest.run_reads`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from pydantic import BaseModel, Field

from stockade.contracts.run_store import (
    ExportCursor,
    Overview,
    RunCursor,
    RunDetail,
    RunQuery,
    RunScope,
    RunSummary,
)


class RunStoreUnavailable(Exception):
    """The store cannot be read now (not reachable, its table not made yet, a range too large to scan)."""


class RunNotFound(Exception):
    """No stored event of the caller's scope belongs to this run."""


class RunReader(Protocol):
    """Every read takes the caller's :class:`RunScope` first: no method reads runs without one."""

    kind: str

    async def list_runs(
        self, scope: RunScope, query: RunQuery, cursor: RunCursor | None, limit: int
    ) -> tuple[list[RunSummary], bool]:
        """At most ``limit`` runs after ``cursor``, newest last event first, and whether more follow."""

    async def run(self, scope: RunScope, run_id: str, project_id: str | None) -> RunDetail:
        """The run's first ``MAX_RUN_EVENTS`` events in timeline order; RunNotFound when none is in scope."""

    async def export(
        self, scope: RunScope, query: RunQuery, after: ExportCursor | None, limit: int
    ) -> tuple[list[dict[str, Any]], bool]:
        """At most ``limit`` exported events after ``after`` (newest first, then event id descending)."""

    async def overview(self, scope: RunScope, query: RunQuery, now: datetime) -> Overview: ...


class ReadSettings(BaseModel):
    """The console's reads of the run store (``guardrail.cmd.read_runs.v2``, README "Reads for the console")."""

    serve: bool = Field(
        default=True,
        description="Answer the console's typed read commands (a replica with sink workers only).",
    )
    max_scan: int = Field(
        default=200_000,
        ge=1,
        description="DynamoDB (no key by time) and MongoDB's overview read the events of a range here: a range "
        "holding more is refused with a message that says to narrow it.",
    )
