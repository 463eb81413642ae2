"""Answers ``guardrail.cmd.read_runs.v2``: the console's typed reads of the run store.

guardrail-ingest owns the run store (it writes it, and :mod:`stockade.guardrail_ingest.reads` is the only code
that reads it). model-api's console asks here with one command of :mod:`stockade.contracts.run_store`
(``list_runs``, ``get_run``, ``overview``, ``export``), each carrying the caller's project scope; the answer
comes from the store this replica writes now (the active database configuration). Anything that is not exactly
one such command (unknown fields, a missing scope, SQL text, a page size over the bound) is refused with
``invalid_request`` before any store is touched: no query text is accepted from anyone.

Every reply fits one NATS message: a page of runs, a run's events or an export page is cut where the next item
would not fit, and says where to go on (``next_cursor``, ``next_offset``, ``next_after``). An event whose payload
alone would not fit is sent with its payload replaced by ``{"truncated_bytes": n}``; a run page's payloads over
``RUN_PAGE_PAYLOAD_BYTES`` (4 KiB) are cut to the fields the page shows.

:meth:`RunReads.answer` is the rule: a typed command in, its typed reply out, or an ``ErrorReply`` when it cannot
answer (``not_found``, ``unavailable``, ``too_large``). :meth:`RunReads.declare` puts it on the service's broker
with :func:`stockade.runtime.bus.command` (queue group ``guardrail-ingest``), which refuses a malformed request
with ``invalid_request`` and answers ``unavailable`` when a store breaks unexpectedly.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any, Final

from faststream.nats import NatsBroker
from pydantic import BaseModel, ValidationError

from stockade.contracts import subjects
from stockade.contracts.replies import ErrorReply
from stockade.contracts.run_store import (
    RUN_PAGE_PAYLOAD_BYTES,
    ExportCursor,
    ExportEvents,
    ExportPageReply,
    GetOverview,
    GetRun,
    ListRuns,
    OverviewReply,
    RunDetailReply,
    RunEvent,
    RunPageReply,
    RunStoreCommand,
    RunStoreRequest,
)
from stockade.guardrail_ingest.reads import RunNotFound, RunReader, RunStoreUnavailable
from stockade.guardrail_ingest.reads.clickhouse import ClickHouseRunReader
from stockade.guardrail_ingest.reads.dynamodb import DynamoRunReader
from stockade.guardrail_ingest.reads.mongodb import MongoRunReader
from stockade.guardrail_ingest.sinks.base import EventSink, SinkError
from stockade.guardrail_ingest.sinks.clickhouse import ClickHouseSink
from stockade.guardrail_ingest.sinks.dynamodb import DynamoSink
from stockade.guardrail_ingest.sinks.mongodb import MongoSink
from stockade.guardrail_ingest.sinks.router import Stores
from stockade.runtime.bus import Command

log = logging.getLogger(__name__)
QUEUE: Final = "guardrail-ingest"
HEADROOM: Final = 4096
"""Bytes of a NATS message left for a reply's fields around its items."""
_COMMANDS = "list_runs, get_run, overview or export"


_error = ErrorReply.of


class _ExportPage(ExportPageReply):
    """An export page, sent as the stores give its rows (values JSON cannot hold, as text)."""

    def to_bytes(self) -> bytes:
        after = self.next_after.model_dump(mode="json") if self.next_after else None
        return json.dumps({"events": self.events, "next_after": after}, default=str).encode()


RunReply = RunPageReply | RunDetailReply | OverviewReply | ExportPageReply


def _invalid(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    return f"expected one typed run-store command ({_COMMANDS}): {where}: {first['msg']}"[:500]


def reader_for(sink: EventSink, *, max_scan: int = 200_000) -> RunReader:
    """The reader of the store ``sink`` writes, on the sink's own connection where it has one."""
    if isinstance(sink, ClickHouseSink):
        return ClickHouseRunReader(sink.read_rows, sink.table)
    if isinstance(sink, MongoSink):
        return MongoRunReader(sink.collection, max_scan=max_scan)
    if isinstance(sink, DynamoSink):
        return DynamoRunReader(
            sink.url, sink.table, region=sink.region, timeout_s=sink.timeout_s, max_scan=max_scan
        )
    raise RunStoreUnavailable(f"no reader for the {getattr(sink, 'kind', type(sink).__name__)} store")


class RunReads:
    """The answers to ``guardrail.cmd.read_runs.v2`` (no broker needed: :meth:`answer` is the rule, :meth:`reply`
    the conversation in bytes).

    ``stores`` and ``active``: the sinks of this replica and the kind of the active store (read per request, so
    an activation moves the reads with the writes).
    """

    def __init__(
        self,
        stores: Stores,
        active: Callable[[], str],
        *,
        max_scan: int = 200_000,
        reply_bytes: int | None = None,
    ) -> None:
        self._stores = stores
        self._active = active
        self._max_scan = max_scan
        self._reply_bytes = reply_bytes  # smaller replies than a NATS message (tests)
        self._readers: dict[int, tuple[EventSink, RunReader]] = {}

    async def _reader(self) -> RunReader:
        try:
            sink = await self._stores.sink_for(self._active())
        except SinkError as exc:
            raise RunStoreUnavailable(str(exc)) from exc
        held = self._readers.get(id(sink))
        if held is None or held[0] is not sink:
            held = (sink, reader_for(sink, max_scan=self._max_scan))
            self._readers[id(sink)] = held
        return held[1]

    async def answer(self, command: RunStoreCommand, max_bytes: int) -> RunReply | ErrorReply:
        """The reply to one command, in a message of ``max_bytes``."""
        budget = max_bytes - HEADROOM
        try:
            reader = await self._reader()
            if isinstance(command, ListRuns):
                return await self._list_runs(reader, command, budget)
            if isinstance(command, GetRun):
                return await self._get_run(reader, command, budget)
            if isinstance(command, ExportEvents):
                return await self._export(reader, command, budget)
            return await self._overview(reader, command, budget)
        except RunNotFound:
            return _error("not_found", "no stored run of that id")
        except RunStoreUnavailable as exc:
            return _error("unavailable", str(exc)[:500])

    async def _list_runs(self, reader: RunReader, command: ListRuns, budget: int) -> RunPageReply:
        runs, more = await reader.list_runs(command.scope, command.query, command.cursor, command.limit)
        kept = _fitting([r.model_dump_json().encode() for r in runs], budget)
        more = more or kept < len(runs)
        runs = runs[:kept]
        return RunPageReply(runs=runs, next_cursor=runs[-1].cursor() if more and runs else None)

    async def _get_run(self, reader: RunReader, command: GetRun, budget: int) -> RunDetailReply:
        detail = await reader.run(command.scope, command.run_id, command.project_id)
        events = [_bounded(e, budget // 2) for e in map(_page_payload, detail.events[command.offset :])]
        head = len(detail.model_copy(update={"events": []}).model_dump_json())
        kept = _fitting([e.model_dump_json().encode() for e in events], budget - head)
        more = kept < len(events)
        return RunDetailReply(
            run=detail.model_copy(update={"events": events[:kept]}),
            next_offset=command.offset + kept if more else None,
        )

    async def _export(self, reader: RunReader, command: ExportEvents, budget: int) -> ExportPageReply:
        rows, more = await reader.export(command.scope, command.query, command.after, command.limit)
        encoded = []
        for i, row in enumerate(rows):
            text = json.dumps(row, default=str).encode()
            if len(text) > budget // 2:
                rows[i] = {**row, "payload": {"truncated_bytes": len(text)}}
                text = json.dumps(rows[i], default=str).encode()
            encoded.append(text)
        kept = _fitting(encoded, budget)
        more = more or kept < len(rows)
        rows = rows[:kept]
        last = rows[-1] if rows else None
        after = (
            ExportCursor(occurred_at=last["occurred_at"], event_id=str(last["event_id"]))
            if more and last is not None
            else None
        )
        return _ExportPage(events=rows, next_after=after)

    async def _overview(
        self, reader: RunReader, command: GetOverview, budget: int
    ) -> OverviewReply | ErrorReply:
        overview = await reader.overview(command.scope, command.query, command.now)
        reply = OverviewReply(overview=overview)
        if len(reply.to_bytes()) > budget:
            return _error(
                "too_large", "the overview does not fit one message: narrow the range or the checks"
            )
        return reply

    def command(self, max_payload: Callable[[], int]) -> Command[RunStoreRequest, BaseModel]:
        """``guardrail.cmd.read_runs.v2`` answered by :meth:`answer`, in messages of ``max_payload()`` bytes (read
        per request: the server says it when connecting)."""

        async def handle(request: RunStoreRequest) -> RunReply | ErrorReply:
            largest = max_payload()
            return await self.answer(request.root, min(largest, self._reply_bytes or largest))

        return Command(
            subjects.GUARDRAIL_CMD_READ_RUNS,
            RunStoreRequest,
            handle,
            unavailable="the run store cannot be read",
            invalid=_invalid,
        )

    async def reply(self, payload: bytes, max_payload: int) -> bytes:
        """The reply to one request on a connection whose messages hold ``max_payload`` bytes; never raises."""
        return await self.command(lambda: max_payload).respond(payload)

    def declare(self, broker: NatsBroker, max_payload: Callable[[], int]) -> None:
        """Answer ``guardrail.cmd.read_runs.v2`` on ``broker`` (started with it)."""
        self.command(max_payload).declare(broker, queue=QUEUE, title="guardrail-ingest run reads")


def _fitting(encoded: list[bytes], budget: int) -> int:
    """How many of the leading items fit ``budget`` bytes together (a comma between two); at least one, so a
    reader always makes progress (each item is bounded to half a message before)."""
    size = 0
    for i, item in enumerate(encoded):
        size += len(item) + 1
        if size > budget:
            return max(i, 1)
    return len(encoded)


_SHOWN = ("stage", "duration_ms", "score", "finding_types", "entity_type")


def _page_payload(event: RunEvent) -> RunEvent:
    """``event`` with a payload over ``RUN_PAGE_PAYLOAD_BYTES`` cut to what a run page shows: the fields it reads
    and the short scalars, plus ``truncated_bytes``."""
    size = len(json.dumps(event.payload, default=str))
    if size <= RUN_PAGE_PAYLOAD_BYTES:
        return event
    kept: dict[str, Any] = {
        k: v
        for k, v in event.payload.items()
        if (k in _SHOWN and len(json.dumps(v, default=str)) <= RUN_PAGE_PAYLOAD_BYTES // 4)
        or v is None
        or isinstance(v, bool | int | float)
        or (isinstance(v, str) and len(v) <= 256)
    }
    kept["truncated_bytes"] = size
    if len(json.dumps(kept, default=str)) > RUN_PAGE_PAYLOAD_BYTES:
        kept = {"truncated_bytes": size}
    return event.model_copy(update={"payload": kept})


def _bounded(event: RunEvent, limit: int) -> RunEvent:
    """``event``, its payload replaced by ``{"truncated_bytes": n}`` when the event would take over ``limit``."""
    size = len(event.model_dump_json())
    if size <= limit:
        return event
    return event.model_copy(update={"payload": {"truncated_bytes": size}})
