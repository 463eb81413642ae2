"""ClickHouse sink: a ``ReplacingMergeTree`` whose sorting key ends in ``event_id``, written without looking first.

Idempotence does not scan the table. A batch on its first delivery is inserted straight away (one insert per
write, with an ``insert_deduplication_token`` of its ids, so a retried identical insert is dropped by the server).
A batch that JetStream delivers again (a worker died or timed out mid-batch, a store error, a refused event) may be
stored already, in part: for those writes only, the ids already stored are looked up through the primary key
(``(project_id, run_id) IN ... AND event_id IN ...``, a few granules, never a scan) and left out. What can still
reach the table twice (a client resending after JetStream's 120 s duplicate window, two workers racing on one
redelivered batch) has the same sorting key and partition, so the engine folds it on merge and readers that need
exact answers before that use ``FINAL`` (or ``argMax``/``uniqExact`` on ``event_id``): README, "Reading the run
table".

clickhouse-connect drives both a ClickHouse server (``http://user:pass@host:8123/db``) and embedded chdb
(``chdb:///path``) with the same API; it is synchronous, so calls run in threads. Rows are built outside any lock;
against a server each thread has its own client and inserts run in parallel, while chdb (one engine per path per
process) takes one statement at a time.

When the server refuses an insert block for its data (a constraint, a column changed by hand), the rows are
inserted one by one and the refused ones reported in ``WriteOutcome.rejected``; connection errors and server
errors that say nothing about the rows (too many parts, memory, timeouts) fail the whole write.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import re
import threading
from datetime import datetime
from typing import Any

import clickhouse_connect
from clickhouse_connect.driver.exceptions import ClickHouseError, DatabaseError, OperationalError

from stockade.guardrail_ingest.records import RECORD_FIELDS
from stockade.guardrail_ingest.sinks.base import SinkError, WriteOutcome, encode_each, reason

# Server errors that say nothing about the rows (too many parts, memory, timeouts, too many queries, read-only
# replica, network): the whole write is retried, no row is blamed.
_TRANSIENT_CODES = frozenset({159, 160, 164, 202, 203, 209, 210, 241, 242, 252, 285, 319, 425, 999})

# the table's columns in insert order: every stored event's fields (records.RECORD_FIELDS)
_COLUMNS = RECORD_FIELDS
_ADDED_COLUMNS = (
    "ingest_key_id Nullable(String)",
    "policy_name LowCardinality(Nullable(String))",
    "policy_version LowCardinality(Nullable(String))",
)
"""Columns added after the first release of the table, in order: ``ensure_schema`` adds any a table lacks."""


_LOOKUP_CHUNK = 1000  # ids per look-up query: ~40 KB of query text, far under max_query_size
_JSON = json.JSONEncoder(
    sort_keys=True, default=str
)  # one encoder: json.dumps(default=...) builds one per call


class ClickHouseSink:
    kind = "clickhouse"

    def __init__(self, dsn: str, table: str, *, timeout_s: float = 10.0) -> None:
        self.dsn = dsn
        self.table = table
        self._timeout_s = timeout_s
        self._embedded = dsn.startswith("chdb:")
        self._clients: list[Any] = []
        self._local = threading.local()
        # chdb: one engine per path per process, one statement at a time. A server takes parallel inserts.
        self._lock: threading.Lock | contextlib.nullcontext[None] = (
            threading.Lock() if self._embedded else contextlib.nullcontext()
        )
        self._clients_lock = threading.Lock()
        self._read_client: Any = None  # chdb: a second client of the engine, switched to readonly for good

    def _connected(self) -> Any:
        """This thread's client (chdb: the one client of the process)."""
        client = (
            self._clients[0] if self._embedded and self._clients else getattr(self._local, "client", None)
        )
        if client is None:
            with self._clients_lock:
                if self._embedded and self._clients:
                    return self._clients[0]
                kwargs: dict[str, Any] = {}
                if not self._embedded:
                    kwargs = {
                        "connect_timeout": self._timeout_s,
                        "send_receive_timeout": self._timeout_s,
                        "autogenerate_session_id": False,  # sessions cannot run two queries at once
                    }
                client = clickhouse_connect.get_client(dsn=self.dsn, **kwargs)
                self._clients.append(client)
                self._local.client = client
        return client

    async def ensure_schema(self) -> None:
        await asyncio.to_thread(self._call, self._create)

    def _create(self) -> None:
        with self._lock:
            self._create_table()

    def _create_table(self) -> None:
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
                received_at DateTime64(6, 'UTC'),
                ingest_key_id Nullable(String),
                policy_name LowCardinality(Nullable(String)),
                policy_version LowCardinality(Nullable(String))
            ) ENGINE = ReplacingMergeTree
            PARTITION BY toYYYYMM(occurred_at)
            ORDER BY (project_id, run_id, event_id)
            SETTINGS non_replicated_deduplication_window = 1000"""
        )
        # A table made before a column existed: add it (old rows read NULL: nothing recorded then). A metadata
        # change only, no rewrite of the stored parts; a no-op on a table that has the column.
        for column in _ADDED_COLUMNS:
            self._connected().command(f"ALTER TABLE {self.table} ADD COLUMN IF NOT EXISTS {column}")

    async def write(self, records: list[dict[str, Any]], *, maybe_stored: bool = False) -> WriteOutcome:
        """Insert ``records``. ``maybe_stored``: some may be stored already (a redelivered batch), so look their
        ids up through the primary key first and count those as duplicates."""
        if not records:
            return WriteOutcome(0, 0)
        return await asyncio.to_thread(self._call, self._write, records, maybe_stored)

    def _write(self, records: list[dict[str, Any]], maybe_stored: bool) -> WriteOutcome:
        existing = self._stored(records) if maybe_stored else set()
        fresh = [r for r in records if r["event_id"] not in existing] if existing else records
        kept, rows, rejected = encode_each("clickhouse", fresh, _row)
        try:
            self._insert(kept, rows)
        except DatabaseError as exc:
            if not _refused_data(exc):
                raise
            # The server refused the block (a constraint, a column changed by hand): find the rows, one insert
            # each; a row refused alone is rejected, the others are stored.
            for record, row in zip(kept, rows, strict=True):
                try:
                    self._insert([record], [row])
                except DatabaseError as row_exc:
                    if not _refused_data(row_exc):
                        raise
                    rejected[str(record["event_id"])] = reason("clickhouse", row_exc)
        return WriteOutcome(len(fresh) - len(rejected), len(records) - len(fresh), rejected)

    def _stored(self, records: list[dict[str, Any]]) -> set[str]:
        """Which of these events are stored: bounded by the primary key (``project_id``, ``run_id``), so it reads
        the granules of these runs only, whatever the size of the table. In chunks: the ids are bound into the
        query text, which ClickHouse caps (``max_query_size``, 256 KiB by default)."""
        found: set[str] = set()
        for start in range(0, len(records), _LOOKUP_CHUNK):
            chunk = records[start : start + _LOOKUP_CHUNK]
            keys = sorted({(r.get("project_id") or "", str(r.get("run_id"))) for r in chunk})
            with self._lock:
                result = self._connected().query(
                    f"SELECT event_id FROM {self.table} "  # noqa: S608 - table name validated by settings
                    "WHERE (project_id, run_id) IN %(keys)s AND event_id IN %(ids)s",
                    parameters={"keys": keys, "ids": [str(r["event_id"]) for r in chunk]},
                )
            found.update(row[0] for row in result.result_rows)
        return found

    def _insert(self, records: list[dict[str, Any]], rows: list[list[Any]]) -> None:
        if not rows:
            return
        token = hashlib.sha256("\n".join(sorted(r["event_id"] for r in records)).encode()).hexdigest()
        with self._lock:
            self._connected().insert(
                self.table,
                rows,
                column_names=list(_COLUMNS),
                settings={"insert_deduplication_token": token},
            )

    def read_rows(self, sql: str, parameters: dict[str, Any]) -> list[tuple[Any, ...]]:
        """Rows of one read query of the run store's reader (:mod:`stockade.guardrail_ingest.reads`), blocking.

        chdb: on a second client of the process's engine, set to ``readonly = 1`` once (a per-query setting
        would be applied with SET and cannot be undone in readonly mode), under the same lock as the writes. A
        server: ``readonly = 1`` on the query. Either way a read stops after ``max_execution_time`` (the store
        timeout). Raises clickhouse-connect's errors unchanged.
        """
        if not self._embedded:
            limits = {"readonly": 1, "max_execution_time": self._read_seconds()}
            result = self._connected().query(sql, parameters=parameters, settings=limits)
            return list(result.result_rows)
        with self._lock:
            if self._read_client is None:
                client = clickhouse_connect.get_client(dsn=self.dsn)
                client.command(f"SET max_execution_time = {self._read_seconds()}")
                client.command("SET readonly = 1")
                self._read_client = client
            try:
                return list(self._read_client.query(sql, parameters=parameters).result_rows)
            except Exception:  # a failed statement can leave the connection out of step: start afresh
                client, self._read_client = self._read_client, None
                with contextlib.suppress(Exception):
                    client.close()
                raise

    def _read_seconds(self) -> int:
        """A read's time limit (``max_execution_time``): the store timeout, whole seconds, at least one."""
        return max(1, round(self._timeout_s))

    def _call(self, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except ClickHouseError as exc:
            raise SinkError(f"clickhouse: {exc}") from exc

    async def aclose(self) -> None:
        clients, self._clients = self._clients, []
        if self._read_client is not None:
            clients.append(self._read_client)
            self._read_client = None
        self._local = threading.local()
        for client in clients:
            await asyncio.to_thread(client.close)


def _row(record: dict[str, Any]) -> list[Any]:
    """The values of ``_COLUMNS``, in order (payload and labels as JSON text with sorted keys)."""
    get = record.get
    payload, labels = get("payload"), get("labels")
    return [
        record["event_id"],
        get("run_id"),
        get("kind"),
        get("name"),
        datetime.fromisoformat(str(get("occurred_at"))),
        get("session_id"),
        get("action"),
        _JSON.encode(payload) if payload else "{}",
        get("project_id") or "",
        get("agent_id"),
        get("environment"),
        get("prompt_name"),
        get("prompt_version"),
        get("correlation_id"),
        _JSON.encode(labels) if labels else "{}",
        datetime.fromisoformat(str(get("received_at"))),
        get("ingest_key_id"),
        get("policy_name"),
        get("policy_version"),
    ]


def _refused_data(exc: DatabaseError) -> bool:
    """True when the server answered and refused the insert; False for connection trouble or a busy server."""
    if isinstance(exc, OperationalError):
        return False
    match = re.search(r"\bCode: (\d+)", str(exc))
    return match is not None and int(match.group(1)) not in _TRANSIENT_CODES
