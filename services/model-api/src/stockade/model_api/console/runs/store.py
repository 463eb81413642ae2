"""The console's reads of the guardrail run store: typed commands to guardrail-ingest, which owns the store.

guardrail-ingest writes every stored event and holds the one reader of each store kind; the console has no
store connection and no store query of its own. Each read is one command of :mod:`stockade.contracts.run_store`
on ``guardrail.cmd.read_runs.v2`` (NATS request/reply), and every command carries the caller's
:class:`ProjectScope` (required: there is no way to ask without one). A long run comes in several replies
(``next_offset``); an export is read page by page (``next_after``) while it streams to the browser, so neither
side holds more than one page.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

import nats.errors
from nats.aio.client import Client as NatsClient
from pydantic import BaseModel, ValidationError

from stockade.contracts import subjects
from stockade.contracts.replies import ErrorReply
from stockade.contracts.run_store import (
    EXPORT_FIELDS,
    MAX_RUN_EVENTS,
    ExportEvents,
    ExportPageReply,
    GetOverview,
    GetRun,
    ListRuns,
    Overview,
    OverviewReply,
    RunCursor,
    RunDetail,
    RunDetailReply,
    RunPageReply,
    RunQuery,
    RunScope,
    RunSummary,
)
from stockade.model_api.console.runs.filters import RunFilters
from stockade.model_api.settings import RunStoreSettings

ProjectScope = RunScope
"""Whose runs a read may see (the caller's projects; docs/permissions.md): required by every read."""
SUBJECT = subjects.GUARDRAIL_CMD_READ_RUNS
R = TypeVar("R", bound=BaseModel)

__all__ = [
    "EXPORT_FIELDS",
    "Overview",
    "ProjectScope",
    "RunDetail",
    "RunNotFound",
    "RunPage",
    "RunStoreClient",
    "RunStoreUnavailable",
    "RunSummary",
]


class RunStoreUnavailable(Exception):
    """The run store cannot be read now (guardrail-ingest not answering, the store not reachable): a 503."""


class RunNotFound(Exception):
    """No stored event of the caller's projects belongs to this run."""


@dataclass(frozen=True)
class RunPage:
    runs: list[RunSummary]
    next_cursor: RunCursor | None


def wire_query(filters: RunFilters) -> RunQuery:
    """The filters of a console page as the command's query."""
    return RunQuery(
        since=filters.since,
        until=filters.until,
        project=filters.project,
        agent=filters.agent,
        outcome=filters.outcome,  # parse_filters allows ACTIONS only
        check=filters.check,
        action=filters.action,
    )


class RunStoreClient:
    """The console's side of ``guardrail.cmd.read_runs.v2`` on the service's NATS connection."""

    def __init__(self, nats: Callable[[], NatsClient | None], settings: RunStoreSettings) -> None:
        self._nats = nats
        self._settings = settings

    async def _ask(self, command: BaseModel, reply: type[R]) -> R:
        nc = self._nats()
        if nc is None or not nc.is_connected:
            raise RunStoreUnavailable(
                "the run store is read through guardrail-ingest over NATS, and model-api is not connected to NATS"
            )
        timeout = self._settings.timeout_s
        try:
            msg = await nc.request(SUBJECT, command.model_dump_json().encode(), timeout=timeout)
        except nats.errors.NoRespondersError as exc:
            raise RunStoreUnavailable(
                f"nothing answers {SUBJECT}: guardrail-ingest, which owns the run store, is not running "
                "(or runs without sink workers)"
            ) from exc
        except nats.errors.TimeoutError as exc:
            raise RunStoreUnavailable(
                f"guardrail-ingest did not answer {SUBJECT} within {timeout:g} s"
            ) from exc
        except nats.errors.Error as exc:
            raise RunStoreUnavailable(f"NATS: {type(exc).__name__}: {exc}") from exc
        refused = ErrorReply.parse(msg.data)
        if refused is not None:
            if refused.error.code == "not_found":
                raise RunNotFound(refused.error.message)
            raise RunStoreUnavailable(
                f"guardrail-ingest could not read the run store ({refused.error.code}): {refused.error.message}"
            )
        try:
            return reply.model_validate_json(msg.data)
        except ValidationError as exc:
            raise RunStoreUnavailable(f"guardrail-ingest answered {SUBJECT} with no readable reply") from exc

    async def list_runs(
        self, scope: ProjectScope, filters: RunFilters, cursor: RunCursor | None, limit: int
    ) -> RunPage:
        command = ListRuns(scope=scope, query=wire_query(filters), cursor=cursor, limit=limit)
        page = await self._ask(command, RunPageReply)
        return RunPage(page.runs, page.next_cursor)

    async def run(self, scope: ProjectScope, run_id: str, project_id: str | None) -> RunDetail:
        """The whole timeline (at most ``MAX_RUN_EVENTS`` events), asked for in as many replies as it takes."""
        reply = await self._ask(GetRun(scope=scope, run_id=run_id, project_id=project_id), RunDetailReply)
        detail, events, asked = reply.run, list(reply.run.events), 0
        # each reply must move the offset on: a responder that does not cannot keep us asking forever
        while reply.next_offset is not None and asked < reply.next_offset < MAX_RUN_EVENTS:
            asked = reply.next_offset
            # the same run: its project from the first reply, so a reused run id cannot switch project midway
            # (a record of no project is stored as ""; None asks for it the way the first request did)
            project = detail.project_id or None
            command = GetRun(scope=scope, run_id=run_id, project_id=project, offset=reply.next_offset)
            reply = await self._ask(command, RunDetailReply)
            events += reply.run.events
        if not events:
            raise RunNotFound(run_id)
        return detail.model_copy(update={"events": events})

    async def overview(self, scope: ProjectScope, filters: RunFilters, now: datetime) -> Overview:
        command = GetOverview(scope=scope, query=wire_query(filters), now=now)
        return (await self._ask(command, OverviewReply)).overview

    async def export(
        self, scope: ProjectScope, filters: RunFilters, max_events: int
    ) -> AsyncIterator[list[dict[str, Any]]]:
        """The export's pages in order, newest event first, ``max_events`` events at most in all. The first page
        is asked for when iteration starts (so a store that cannot be read fails before anything is sent)."""
        query, after, left = wire_query(filters), None, max_events
        while left > 0:
            command = ExportEvents(
                scope=scope, query=query, after=after, limit=min(self._settings.export_page, left)
            )
            page = await self._ask(command, ExportPageReply)
            rows = page.events[:left]
            left -= len(rows)
            yield rows
            if page.next_after is None or not rows:
                return
            after = page.next_after
