"""Answers ``guardrail.cmd.read_runs.v1``: the console's read queries on the embedded run store.

chdb opens its directory in one process only; under ``stockade up`` that is this service, so model-api's console
sends its ClickHouse queries here (README, "Reads for the console"). Served only when this replica writes
ClickHouse through chdb: a ClickHouse server is read by the console directly.

A query runs on a connection in ``readonly = 1`` (no writes, no DDL, no table functions, no setting changes);
``INTO OUTFILE``, which readonly mode still allows, and a second statement (``;``) are refused before they reach
the store. A result larger than
one NATS message is cut into parts (:mod:`stockade.contracts.run_reads`): part 0 answers the request, the others
wait here, for ``PART_TTL_S`` at most, until the asker fetches them.

The responder is a FastStream subscriber on the service's broker (:meth:`RunReads.declare`, queue group
``guardrail-ingest``); it takes the raw request body and answers bytes (an ``ErrorReply`` when it cannot answer).
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any, Final

from clickhouse_connect.driver.exceptions import ClickHouseError
from faststream.nats import NatsBroker
from pydantic import ValidationError

from stockade.contracts import RunStoreRead, subjects
from stockade.contracts.replies import ErrorReply
from stockade.contracts.run_reads import decode_value, encode_value
from stockade.guardrail_ingest.sinks.base import SinkError
from stockade.guardrail_ingest.sinks.clickhouse import ClickHouseSink
from stockade.runtime.bus import raw_body

log = logging.getLogger(__name__)
QUEUE: Final = "guardrail-ingest"
PART_TTL_S: Final = 30.0
"""How long the later parts of a result wait for the asker."""
MAX_PENDING: Final = 8
"""Results with parts waiting at once (the oldest is dropped first)."""
MAX_ROWS: Final = 2_000_000
"""Rows one answer holds at most (the console's own queries carry a LIMIT far below)."""
HEADROOM: Final = 1024
"""Bytes of a NATS message left for the reply's fields around the rows."""
_OUTFILE = re.compile(r"outfile", re.IGNORECASE)
_READ = re.compile(r"^\s*(\(\s*)*(select|with)\b", re.IGNORECASE)


def _error(code: str, message: str) -> bytes:
    return ErrorReply.of(code, message).to_bytes()


def serves_reads(clickhouse_url: str | None) -> bool:
    """Whether a replica whose ClickHouse store is ``clickhouse_url`` answers the console's reads: chdb only."""
    return bool(clickhouse_url and clickhouse_url.startswith("chdb:"))


class RunReads:
    """The answers to ``guardrail.cmd.read_runs.v1`` (no broker needed: :meth:`answer` takes and returns bytes)."""

    def __init__(
        self,
        sink: Callable[[], Awaitable[Any]],
        *,
        clock: Callable[[], float] = time.monotonic,
        part_bytes: int | None = None,
    ) -> None:
        self._sink = sink
        self._clock = clock
        self._part_bytes = part_bytes  # smaller parts than a NATS message (tests)
        self._pending: OrderedDict[str, tuple[float, list[bytes]]] = OrderedDict()

    async def answer(self, payload: bytes, max_bytes: int) -> bytes:
        try:
            request = RunStoreRead.model_validate_json(payload or b"{}")
        except ValidationError as exc:
            return _error("invalid_request", f"expected a RunStoreRead: {exc.errors()[0]['msg']}")
        self._prune()
        if request.part:
            return self._later_part(request.read_id, request.part)
        if not _READ.match(request.sql) or _OUTFILE.search(request.sql) or ";" in request.sql:
            return _error(
                "refused", "only one SELECT (or WITH ... SELECT) query, without INTO OUTFILE, is answered"
            )
        try:
            sink = await self._sink()
        except SinkError as exc:
            return _error("unavailable", str(exc))
        if not isinstance(sink, ClickHouseSink):
            return _error("unavailable", "this replica's store is not ClickHouse")
        try:
            rows = await sink.read(request.sql, decode_value(request.parameters))
        except ClickHouseError as exc:
            text = str(exc)
            if "UNKNOWN_TABLE" in text or "Code: 60." in text:
                return _error(
                    "unknown_table", f"the table {sink.table} does not exist yet: no run has been stored"
                )
            return _error("query_failed", text[:500])
        if len(rows) > MAX_ROWS:
            return _error("too_large", f"{len(rows)} rows; at most {MAX_ROWS} are answered")
        parts = _parts(request.read_id, rows, max_bytes - HEADROOM)
        if parts is None:
            return _error("too_large", "one row is larger than a NATS message")
        if len(parts) > 1:
            self._pending[request.read_id] = (self._clock() + PART_TTL_S, parts)
            while len(self._pending) > MAX_PENDING:
                self._pending.popitem(last=False)
        return parts[0]

    def _later_part(self, read_id: str, part: int) -> bytes:
        held = self._pending.get(read_id)
        if held is None or part >= len(held[1]):
            return _error("expired", f"no part {part} of read {read_id} is held (asked too late?)")
        if part == len(held[1]) - 1:
            del self._pending[read_id]
        return held[1][part]

    def _prune(self) -> None:
        now = self._clock()
        for read_id in [r for r, (deadline, _) in self._pending.items() if deadline < now]:
            del self._pending[read_id]

    async def reply(self, payload: bytes, max_payload: int) -> bytes:
        """The reply to one request on a connection whose messages hold ``max_payload`` bytes; never raises."""
        try:
            return await self.answer(payload, min(max_payload, self._part_bytes or max_payload))
        except Exception as exc:  # the store broke in an unexpected way: answer rather than time out
            log.warning("%s failed: %s: %s", subjects.GUARDRAIL_CMD_READ_RUNS, type(exc).__name__, exc)
            return _error("unavailable", "the run store cannot be read")

    def declare(self, broker: NatsBroker, max_payload: Callable[[], int]) -> None:
        """Answer ``guardrail.cmd.read_runs.v1`` on ``broker`` (started with it); ``max_payload``: the largest
        message of the broker's connection, read per request (the server says it when connecting)."""

        @broker.subscriber(
            subjects.GUARDRAIL_CMD_READ_RUNS,
            queue=QUEUE,
            decoder=raw_body,
            title="guardrail-ingest run reads",
        )
        async def on_read(body: bytes) -> bytes:
            return await self.reply(body, max_payload())


def _parts(read_id: str, rows: list[tuple[Any, ...]], budget: int) -> list[bytes] | None:
    """The reply messages of ``rows``, each at most ``budget`` bytes of rows; None when one row does not fit."""
    chunks: list[list[bytes]] = [[]]
    size = 0
    for row in rows:
        encoded = json.dumps([encode_value(v) for v in row], separators=(",", ":")).encode()
        if len(encoded) + 1 > budget:
            return None
        if size + len(encoded) + 1 > budget and chunks[-1]:
            chunks.append([])
            size = 0
        chunks[-1].append(encoded)
        size += len(encoded) + 1
    head = json.dumps(read_id)
    return [
        b'{"schema_version":1,"read_id":%s,"part":%d,"parts":%d,"rows":[%s]}'
        % (head.encode(), i, len(chunks), b",".join(chunk))
        for i, chunk in enumerate(chunks)
    ]
