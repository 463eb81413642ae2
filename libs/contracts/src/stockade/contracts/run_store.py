"""``guardrail.cmd.read_runs.v2``: the run store's read contract, typed commands and their replies.

guardrail-ingest owns the run store: it writes every stored event and it alone reads them back
(``stockade.guardrail_ingest.reads``). The console (model-api) asks it on ``guardrail.cmd.read_runs.v2`` with one
of the commands below and gets one of the replies (or an :class:`~stockade.contracts.replies.ErrorReply`). No
command carries a query language: a store query exists only inside guardrail-ingest, built from these fields.

Every command carries the caller's :class:`RunScope`, a required field: no command can read runs without naming
whose runs it may see, and an empty scope reads nothing. Page sizes are bounded here (``MAX_*``), and the
responder also cuts a reply to fit one NATS message, handing back where to go on (a cursor or an offset).

The result types (:class:`RunSummary`, :class:`RunDetail`, :class:`RunEvent`, :class:`Overview`) are what the
console's pages render; their properties (a run's outcome, an event's stage and score) are computed here, once.
"""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from typing import Annotated, Any, Final, Literal

from pydantic import AwareDatetime, ConfigDict, Field, RootModel

from stockade.contracts.run_records import ContractModel as _Model
from stockade.contracts.run_records import Overview as Overview
from stockade.contracts.run_records import RunDetail as RunDetail
from stockade.contracts.run_records import RunEvent as RunEvent

MAX_PAGE_RUNS: Final = 500
"""Runs one ``list_runs`` page holds at most."""
MAX_RUN_EVENTS: Final = 5000
"""A run page shows at most this many events (every reader stops there)."""
MAX_EXPORT_PAGE: Final = 2000
"""Events one ``export`` page holds at most."""
RUN_PAGE_PAYLOAD_BYTES: Final = 4096
"""A ``get_run`` event's payload larger than this (as JSON) comes back cut to its short scalar fields and
``finding_types``, plus ``truncated_bytes`` (the full size): a run page shows no more, and holds at most
``MAX_RUN_EVENTS`` times this. The export carries payloads whole."""
MAX_SCOPE_PROJECTS: Final = 10_000
ACTIONS: Final[tuple[str, ...]] = ("block", "mask", "warn", "allow")
"""Decision actions, strongest first; a run's outcome is the strongest action among its events."""
EXPORT_FIELDS: Final[tuple[str, ...]] = (
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
    "policy_name",
    "policy_version",
)
"""Keys of an exported event (the CSV's columns; ``payload`` and ``finding_types`` are objects; the policy
fields are None for events of a local configuration)."""

_NAME = r"^[^\x00-\x1f\x7f-\x9f]{1,128}$"
_ID = r"^[^\x00-\x1f\x7f-\x9f]{1,256}$"
Action = Literal["block", "mask", "warn", "allow"]


class RunScope(_Model):
    """Whose runs a read may see: the caller's projects (docs/permissions.md). Every command requires one.

    ``projects``: the ids of the projects the caller is a member of. ``unowned``: also records that name no
    project (audit records filed under no project), which only platform administrators read. An empty scope
    reads nothing; there is no "every project" value.
    """

    projects: frozenset[Annotated[str, Field(pattern=_ID)]] = Field(max_length=MAX_SCOPE_PROJECTS)
    unowned: bool = False

    @property
    def empty(self) -> bool:
        return not self.projects and not self.unowned

    def allows(self, project_id: str | None) -> bool:
        return project_id in self.projects if project_id else self.unowned

    def narrowed(self, project: str | None) -> RunScope:
        """The scope of a ``project`` filter: that one project if the caller may see it, else nothing."""
        if project is None:
            return self
        return RunScope(projects=frozenset({project}) & self.projects)

    def stored_ids(self) -> list[str]:
        """The stored ``project_id`` values in scope (a record without a project is stored as ``""``)."""
        return sorted(self.projects) + ([""] if self.unowned else [])


class RunQuery(_Model):
    """What the runs list, the overview and the export are narrowed to: a time range (at most 366 days) and
    optional project, agent, run outcome, check name and action."""

    since: AwareDatetime
    until: AwareDatetime
    project: str | None = Field(default=None, pattern=_ID)
    agent: str | None = Field(default=None, pattern=_NAME)
    outcome: Action | None = None
    check: str | None = Field(default=None, pattern=_NAME)
    action: Action | None = None

    def range_hours(self) -> float:
        return (self.until - self.since).total_seconds() / 3600

    def bucket_seconds(self) -> int:
        """The overview's time bucket: an hour up to two days, six hours up to two weeks, else a day."""
        hours = self.range_hours()
        return 3600 if hours <= 48 else 6 * 3600 if hours <= 24 * 14 else 86400

    def buckets(self, bucket_s: int) -> list[datetime]:
        """The start of every ``bucket_s`` bucket over the range, aligned to the epoch (at most 400)."""
        start = int(self.since.timestamp()) // bucket_s * bucket_s
        end = self.until.timestamp()
        out: list[datetime] = []
        t = start
        while t < end and len(out) < 400:
            out.append(datetime.fromtimestamp(t, UTC))
            t += bucket_s
        return out


class RunCursor(_Model):
    """Where the next page of runs starts: runs are ordered by their last event, newest first, then ids."""

    last_at: AwareDatetime
    project_id: str = Field(max_length=256)
    run_id: str = Field(max_length=256)

    def encode(self) -> str:
        """The cursor as a URL-safe token (the console's page links)."""
        body = json.dumps([self.last_at.isoformat(), self.project_id, self.run_id], separators=(",", ":"))
        return base64.urlsafe_b64encode(body.encode()).decode().rstrip("=")


class ExportCursor(_Model):
    """Where the next export page starts: events are exported newest first, then by event id (descending)."""

    occurred_at: AwareDatetime
    event_id: str = Field(max_length=256)


class RunSummary(_Model):
    project_id: str
    run_id: str
    agent_id: str | None
    environment: str | None
    first_at: AwareDatetime
    last_at: AwareDatetime
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

    def cursor(self) -> RunCursor:
        return RunCursor(last_at=self.last_at, project_id=self.project_id, run_id=self.run_id)


# --- commands ----------------------------------------------------------------------------------------------
class ListRuns(_Model):
    """A page of runs, newest last event first (keyset paging: ``cursor`` is the last page's ``next_cursor``)."""

    command: Literal["list_runs"] = "list_runs"
    scope: RunScope
    query: RunQuery
    cursor: RunCursor | None = None
    limit: int = Field(default=50, ge=1, le=MAX_PAGE_RUNS)


class GetRun(_Model):
    """One run's timeline, from its ``offset``-th event (a long run comes in several replies); payloads over
    ``RUN_PAGE_PAYLOAD_BYTES`` come back cut."""

    command: Literal["get_run"] = "get_run"
    scope: RunScope
    run_id: str = Field(pattern=_ID)
    project_id: str | None = Field(default=None, pattern=_ID)
    offset: int = Field(default=0, ge=0, lt=MAX_RUN_EVENTS)


class GetOverview(_Model):
    """The overview page's aggregates over the query's range; ``now`` decides "today" (UTC)."""

    command: Literal["overview"] = "overview"
    scope: RunScope
    query: RunQuery
    now: AwareDatetime


class ExportEvents(_Model):
    """One page of the events export, newest first; ``after`` is the last page's ``next_after``."""

    command: Literal["export"] = "export"
    scope: RunScope
    query: RunQuery
    after: ExportCursor | None = None
    limit: int = Field(default=500, ge=1, le=MAX_EXPORT_PAGE)


RunStoreCommand = Annotated[ListRuns | GetRun | GetOverview | ExportEvents, Field(discriminator="command")]


class RunStoreRequest(RootModel[RunStoreCommand]):
    """Request of ``guardrail.cmd.read_runs.v2``: exactly one command (``command`` names it). Anything else,
    unknown fields included, is refused with ``invalid_request``."""

    model_config = ConfigDict(frozen=True)


# --- replies -----------------------------------------------------------------------------------------------
class RunPageReply(_Model):
    runs: list[RunSummary]
    next_cursor: RunCursor | None = Field(description="None: this was the last page.")


class RunDetailReply(_Model):
    run: RunDetail
    next_offset: int | None = Field(
        description="More events of the run: ask again with this offset. None: the timeline is complete."
    )


class OverviewReply(_Model):
    overview: Overview


class ExportPageReply(_Model):
    events: list[dict[str, Any]] = Field(description="Exported events, keys as EXPORT_FIELDS, newest first.")
    next_after: ExportCursor | None = Field(description="None: the export is complete.")


class RunStoreReply(RootModel[RunPageReply | RunDetailReply | OverviewReply | ExportPageReply]):
    """Reply of ``guardrail.cmd.read_runs.v2``: the reply of the command asked (or an ErrorReply: codes
    ``invalid_request``, ``not_found`` (no run of that id in scope), ``unavailable``)."""

    model_config = ConfigDict(frozen=True)
