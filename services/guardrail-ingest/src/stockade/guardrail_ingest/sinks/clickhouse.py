"""ClickHouse sink: ``ReplacingMergeTree`` keyed by event, existing ids filtered out before each insert, and an
``insert_deduplication_token`` per insert so a retried identical insert is dropped by the server.

clickhouse-connect drives both a ClickHouse server (``http://user:pass@host:8123/db``) and embedded chdb
(``chdb:///path``) with the same API; it is synchronous, so every call runs in a thread, one at a time per sink
(chdb allows one engine per path per process). Readers that need exact counts while merges are pending use
``FINAL`` (or ``count(DISTINCT event_id)``); the pre-insert filter keeps duplicates out in the first place.

When the server refuses an insert block for its data (a constraint, a column changed by hand), the rows are
inserted one by one and the refused ones reported in ``WriteOutcome.rejected``; connection errors and server
errors that say nothing about the rows (too many parts, memory, timeouts) fail the whole write.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import threading
from datetime import datetime
from typing import Any

import clickhouse_connect
from clickhouse_connect.driver.exceptions import ClickHouseError, DatabaseError, OperationalError

from stockade.guardrail_ingest.sinks.base import SinkError, WriteOutcome, reason

# Server errors that say nothing about the rows (too many parts, memory, timeouts, too many queries, read-only
# replica, network): the whole write is retried, no row is blamed.
_TRANSIENT_CODES = frozenset({159, 160, 164, 202, 203, 209, 210, 241, 242, 252, 285, 319, 425, 999})

_COLUMNS = (
    "event_id",
    "run_id",
    "kind",
    "name",
    "occurred_at",
    "session_id",
    "action",
    "payload",
    "project_id",
    "agent_id",
    "environment",
    "prompt_name",
    "prompt_version",
    "correlation_id",
    "labels",
    "received_at",
)


class ClickHouseSink:
    kind = "clickhouse"

    def __init__(self, dsn: str, table: str, *, timeout_s: float = 10.0) -> None:
        self.dsn = dsn
        self.table = table
        self._timeout_s = timeout_s
        self._client: Any = None
        self._lock = threading.Lock()

    def _connected(self) -> Any:
        if self._client is None:
            kwargs: dict[str, Any] = {}
            if not self.dsn.startswith("chdb:"):
                kwargs = {"connect_timeout": self._timeout_s, "send_receive_timeout": self._timeout_s}
            self._client = clickhouse_connect.get_client(dsn=self.dsn, **kwargs)
        return self._client

    async def ensure_schema(self) -> None:
        await asyncio.to_thread(self._locked, self._create)

    def _create(self) -> None:
        self._connected().command(
            f"""CREATE TABLE IF NOT EXISTS {self.table} (
                event_id String,
                run_id String,
                kind LowCardinality(String),
                name LowCardinality(String),
                occurred_at DateTime64(6, 'UTC'),
                session_id Nullable(String),
                action LowCardinality(Nullable(String)),
                payload String,
                project_id String,
                agent_id Nullable(String),
                environment LowCardinality(Nullable(String)),
                prompt_name Nullable(String),
                prompt_version Nullable(String),
                correlation_id Nullable(String),
                labels String,
                received_at DateTime64(6, 'UTC')
            ) ENGINE = ReplacingMergeTree
            PARTITION BY toYYYYMM(occurred_at)
            ORDER BY (project_id, run_id, event_id)
            SETTINGS non_replicated_deduplication_window = 1000"""
        )

    async def write(self, records: list[dict[str, Any]]) -> WriteOutcome:
        if not records:
            return WriteOutcome(0, 0)
        return await asyncio.to_thread(self._locked, self._write, records)

    def _write(self, records: list[dict[str, Any]]) -> WriteOutcome:
        client = self._connected()
        ids = [r["event_id"] for r in records]
        existing = {
            row[0]
            for row in client.query(
                f"SELECT event_id FROM {self.table} WHERE event_id IN %(ids)s",  # noqa: S608 - table name validated by settings
                parameters={"ids": ids},
            ).result_rows
        }
        fresh = [r for r in records if r["event_id"] not in existing]
        rows: list[list[Any]] = []
        rejected: dict[str, str] = {}
        for record in fresh:
            try:
                rows.append(_row(record))
            except (KeyError, TypeError, ValueError) as exc:  # a malformed record: no redelivery mends it
                rejected[str(record["event_id"])] = reason("clickhouse", exc)
        kept = [r for r in fresh if str(r["event_id"]) not in rejected]
        try:
            self._insert(client, kept, rows)
        except DatabaseError as exc:
            if not _refused_data(exc):
                raise
            # The server refused the block (a constraint, a column changed by hand): find the rows, one insert
            # each; a row refused alone is rejected, the others are stored.
            for record, row in zip(kept, rows, strict=True):
                try:
                    self._insert(client, [record], [row])
                except DatabaseError as row_exc:
                    if not _refused_data(row_exc):
                        raise
                    rejected[str(record["event_id"])] = reason("clickhouse", row_exc)
        return WriteOutcome(len(fresh) - len(rejected), len(records) - len(fresh), rejected)

    def _insert(self, client: Any, records: list[dict[str, Any]], rows: list[list[Any]]) -> None:
        if not rows:
            return
        token = hashlib.sha256("\n".join(sorted(r["event_id"] for r in records)).encode()).hexdigest()
        client.insert(
            self.table,
            rows,
            column_names=list(_COLUMNS),
            settings={"insert_deduplication_token": token},
        )

    def _locked(self, fn: Any, *args: Any) -> Any:
        with self._lock:
            try:
                return fn(*args)
            except ClickHouseError as exc:
                raise SinkError(f"clickhouse: {exc}") from exc

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await asyncio.to_thread(client.close)


def _row(record: dict[str, Any]) -> list[Any]:
    row: list[Any] = []
    for column in _COLUMNS:
        value = record.get(column)
        if column in ("occurred_at", "received_at"):
            value = datetime.fromisoformat(str(value))
        elif column in ("payload", "labels"):
            value = json.dumps(value or {}, sort_keys=True, default=str)
        elif column == "project_id":
            value = value or ""
        row.append(value)
    return row


def _refused_data(exc: DatabaseError) -> bool:
    """True when the server answered and refused the insert; False for connection trouble or a busy server."""
    if isinstance(exc, OperationalError):
        return False
    match = re.search(r"\bCode: (\d+)", str(exc))
    return match is not None and int(match.group(1)) not in _TRANSIENT_CODES
