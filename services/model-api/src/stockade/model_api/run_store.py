"""The read side of the guardrail run store, as the console's run pages see it.

guardrail-ingest writes one flat record per event (its README, "Stored record"); the pages read them back
through a :class:`RunReader`. The store read is the one of the active database configuration; ClickHouse (a
server, or chdb), MongoDB and DynamoDB each have a reader (README, "Runs and decisions").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from stockade.model_api.run_filters import Cursor, RunFilters

EXPORT_FIELDS: tuple[str, ...] = (
    "occurred_at",
    "event_id",
    "run_id",
    "project_id",
    "agent_id",
    "environment",
    "session_id",
    "kind",
    "name",
    "action",
    "stage",
    "duration_ms",
    "score",
    "finding_types",
    "payload",
)
"""Columns of the CSV export (the JSON export has the same keys, ``payload`` and ``finding_types`` as objects)."""
MAX_RUN_EVENTS = 5000
"""A run page shows at most this many events (every reader stops there)."""


@dataclass(frozen=True)
class ProjectScope:
    """Whose runs a read may see: the caller's projects (docs/permissions.md). Every reader method requires one.

    ``projects``: the ids of the projects the caller is a member of. ``unowned``: also records that name no
    project (audit records filed under no project), which only platform administrators read. An empty scope
    reads nothing; there is no "every project" value.
    """

    projects: frozenset[str]
    unowned: bool = False

    @property
    def empty(self) -> bool:
        return not self.projects and not self.unowned

    def allows(self, project_id: str | None) -> bool:
        return project_id in self.projects if project_id else self.unowned

    def narrowed(self, project: str | None) -> ProjectScope:
        """The scope of a ``project`` filter: that one project if the caller may see it, else nothing."""
        if project is None:
            return self
        return ProjectScope(frozenset({project}) & self.projects)

    def stored_ids(self) -> list[str]:
        """The stored ``project_id`` values in scope (a record without a project is stored as ``""``)."""
        return sorted(self.projects) + ([""] if self.unowned else [])


class RunStoreUnavailable(Exception):
    """The active store cannot be read by the console (no reader for its kind, not configured, not reachable)."""


class RunNotFound(Exception):
    """No stored event belongs to this run."""


@dataclass(frozen=True)
class RunSummary:
    project_id: str
    run_id: str
    agent_id: str | None
    environment: str | None
    first_at: datetime
    last_at: datetime
    events: int
    blocks: int
    masks: int
    warns: int
    trust_rejections: int
    checks: tuple[str, ...]

    @property
    def outcome(self) -> str:
        if self.blocks:
            return "block"
        if self.masks:
            return "mask"
        return "warn" if self.warns else "allow"

    @property
    def duration_ms(self) -> float:
        return (self.last_at - self.first_at).total_seconds() * 1000

    def cursor(self) -> Cursor:
        return Cursor(self.last_at, self.project_id, self.run_id)


@dataclass(frozen=True)
class RunPage:
    runs: list[RunSummary]
    next_cursor: Cursor | None


@dataclass(frozen=True)
class RunEvent:
    """One stored event, as stored (the library never puts raw values in a payload)."""

    event_id: str
    kind: str
    name: str
    occurred_at: datetime
    session_id: str | None
    action: str | None
    payload: dict[str, Any]

    @property
    def stage(self) -> str | None:
        value = self.payload.get("stage")
        return str(value) if value is not None else None

    @property
    def duration_ms(self) -> float | None:
        value = self.payload.get("duration_ms")
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None

    @property
    def score(self) -> float | None:
        value = self.payload.get("score")
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None

    @property
    def finding_types(self) -> dict[str, int]:
        value = self.payload.get("finding_types")
        if isinstance(value, dict):
            return {str(k): int(v) for k, v in value.items() if isinstance(v, int | float)}
        entity = self.payload.get("entity_type")  # a pii_audit entry names one finding
        return {str(entity): 1} if entity else {}

    def details(self) -> list[tuple[str, str]]:
        """The payload's other fields (reason, layer, error, ...), scalars only, as text."""
        shown = {"stage", "duration_ms", "score", "finding_types", "entity_type"}
        return [
            (k, str(v))
            for k, v in sorted(self.payload.items())
            if k not in shown and v is not None and v != "" and isinstance(v, str | int | float | bool)
        ]


@dataclass(frozen=True)
class RunDetail:
    project_id: str
    run_id: str
    agent_id: str | None
    environment: str | None
    prompt_name: str | None
    prompt_version: str | None
    correlation_id: str | None
    labels: dict[str, str]
    events: list[RunEvent]

    @property
    def first_at(self) -> datetime:
        return self.events[0].occurred_at

    def offset_ms(self, event: RunEvent) -> float:
        return (event.occurred_at - self.first_at).total_seconds() * 1000


@dataclass(frozen=True)
class Overview:
    bucket_s: int
    buckets: list[datetime]
    # check name -> bucket start -> (blocks, masks)
    decisions: dict[str, dict[datetime, tuple[int, int]]]
    top_findings: list[tuple[str, int]]
    # check name -> (count, p50, p95, p99) in ms
    latency: list[tuple[str, int, float, float, float]]
    trust_rejections: list[tuple[str, int]]
    # (label, today, average per day over the 7 days before)
    today: list[tuple[str, int, float]] = field(default_factory=list)


class RunReader(Protocol):
    """Every read takes the caller's :class:`ProjectScope` first: no method reads runs without one."""

    kind: str

    async def list_runs(
        self, scope: ProjectScope, filters: RunFilters, cursor: Cursor | None, limit: int
    ) -> RunPage: ...

    async def run(self, scope: ProjectScope, run_id: str, project_id: str | None) -> RunDetail: ...

    async def export(self, scope: ProjectScope, filters: RunFilters, limit: int) -> list[dict[str, Any]]: ...

    async def overview(self, scope: ProjectScope, filters: RunFilters, now: datetime) -> Overview: ...

    async def aclose(self) -> None: ...
