"""Run pages read from an embedded ClickHouse (chdb) that guardrail-ingest holds, through guardrail-ingest.

chdb opens a directory in one process only, so under ``stockade up`` the console cannot open the store
guardrail-ingest writes. This reader sends the same queries as :class:`ClickHouseRunReader` (it is one, with
another way to run a query) over NATS (``guardrail.cmd.read_runs.v1``) and guardrail-ingest answers them on a
read-only connection, in parts when a result is larger than one message (README, "Which store").
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

import nats.errors
from nats.aio.client import Client as NatsClient

from stockade.contracts import RunStoreRead, RunStoreRows, subjects
from stockade.contracts.replies import ErrorReply
from stockade.contracts.run_reads import decode_row, encode_value
from stockade.model_api.run_store import RunStoreUnavailable
from stockade.model_api.run_store_clickhouse import ClickHouseRunReader

T = TypeVar("T")
SUBJECT = subjects.GUARDRAIL_CMD_READ_RUNS


class IngestRunReader(ClickHouseRunReader):
    """The ClickHouse reader, each query answered by guardrail-ingest over NATS instead of a client of its own."""

    def __init__(self, nats: Callable[[], NatsClient | None], table: str, *, timeout_s: float = 10.0) -> None:
        super().__init__(f"nats:{SUBJECT}", table, timeout_s=timeout_s)
        self._nats = nats
        self._loop: asyncio.AbstractEventLoop | None = None

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        self._loop = asyncio.get_running_loop()  # the queries run in a thread; the requests on this loop
        return await super()._run(fn, *args)

    def _rows(self, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(self.fetch(sql, params), self._loop).result()

    async def fetch(self, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        """The rows of one query, every part of the answer in order; RunStoreUnavailable when none comes."""
        nc = self._nats()
        if nc is None or not nc.is_connected:
            raise RunStoreUnavailable(
                "the run store is embedded (chdb) and read through guardrail-ingest over NATS, but model-api is "
                "not connected to NATS"
            )
        read_id = uuid.uuid4().hex
        rows: list[tuple[Any, ...]] = []
        part, parts = 0, 1
        while part < parts:
            request = (
                RunStoreRead(read_id=read_id, sql=sql, parameters=encode_value(params))
                if part == 0
                else RunStoreRead(read_id=read_id, part=part)
            )
            reply = await self._ask(nc, request)
            rows.extend(decode_row(row) for row in reply.rows)
            part, parts = part + 1, reply.parts
        return rows

    async def _ask(self, nc: NatsClient, request: RunStoreRead) -> RunStoreRows:
        try:
            msg = await nc.request(SUBJECT, request.model_dump_json().encode(), timeout=self._timeout_s)
        except nats.errors.NoRespondersError as exc:
            raise RunStoreUnavailable(
                f"nothing answers {SUBJECT}: guardrail-ingest is not running, or its ClickHouse store is not "
                "embedded (a ClickHouse server is read directly: set MODEL_API_RUNS__CLICKHOUSE_URL)"
            ) from exc
        except nats.errors.TimeoutError as exc:
            raise RunStoreUnavailable(
                f"guardrail-ingest did not answer {SUBJECT} within {self._timeout_s:g} s"
            ) from exc
        except nats.errors.Error as exc:
            raise RunStoreUnavailable(f"NATS: {type(exc).__name__}: {exc}") from exc
        refused = ErrorReply.parse(msg.data)
        if refused is not None:
            if refused.error.code == "unknown_table":
                raise RunStoreUnavailable(
                    f"the ClickHouse table {self.table} does not exist yet: no run has been stored"
                )
            raise RunStoreUnavailable(
                f"guardrail-ingest could not read the run store ({refused.error.code}): {refused.error.message}"
            )
        try:
            reply = RunStoreRows.model_validate(json.loads(msg.data))  # json: NaN (an empty quantile) allowed
        except ValueError as exc:
            raise RunStoreUnavailable(f"guardrail-ingest answered {SUBJECT} with no readable rows") from exc
        if reply.read_id != request.read_id or reply.part != request.part:
            raise RunStoreUnavailable(f"guardrail-ingest answered another read on {SUBJECT}")
        return reply

    async def aclose(self) -> None:
        """Nothing to close: the NATS connection is the service's."""
