"""Run pages read from ClickHouse (a server, or embedded chdb): the table guardrail-ingest's ClickHouse sink
creates (``ReplacingMergeTree``, ``ORDER BY (project_id, run_id, event_id)``, partitioned by month).

Every query is bounded by the filters' time range (partition pruning on ``occurred_at``) and, when a project is
given, by the primary key. A run is a ``(project_id, run_id)`` group; the runs list is ordered by each run's last
event, newest first, and paged with a keyset cursor (no OFFSET). Queries do not use ``FINAL`` (its cost on the
large ranges these pages read): the sink stores each delivered batch once, so the counts are exact except after
a client re-sends a batch later than JetStream's duplicate window (two minutes), whose second copy counts twice
until ClickHouse merges the part (guardrail-ingest README, "Reading the run table").

clickhouse-connect is synchronous: calls run in a thread, one at a time per reader (chdb allows one engine per
path per process).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import clickhouse_connect
from clickhouse_connect.driver.exceptions import ClickHouseError

from stockade.model_api.run_filters import Cursor, RunFilters
from stockade.model_api.run_store import (
    EXPORT_FIELDS,
    Overview,
    RunDetail,
    RunEvent,
    RunNotFound,
    RunPage,
    RunStoreUnavailable,
    RunSummary,
)

T = TypeVar("T")
MAX_RUN_EVENTS = 5000
_MICRO = timedelta(microseconds=1)
# A check event's duration_ms: the sink writes payloads with sorted keys and json.dumps separators, so it is the
# first key; read it by position (byte work) and parse the JSON only for a payload written otherwise.
_DURATION = (
    "if(startsWith(payload, '{\"duration_ms\": ') AND position(payload, ',') > 17, "
    "toFloat64OrZero(substring(payload, 17, position(payload, ',') - 17)), "
    "JSONExtractFloat(payload, 'duration_ms'))"
)
_OUTCOME = (
    "multiIf(countIf(action = 'block') > 0, 'block', countIf(action = 'mask') > 0, 'mask', "
    "countIf(action = 'warn') > 0, 'warn', 'allow')"
)


def _time(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


def _aware(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _payload(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


class ClickHouseRunReader:
    kind = "clickhouse"

    def __init__(self, dsn: str, table: str, *, timeout_s: float = 10.0) -> None:
        self.dsn = dsn
        self.table = table
        self._timeout_s = timeout_s
        self._client: Any = None
        self._lock = threading.Lock()

    # -- plumbing ---------------------------------------------------------------------------------------------
    def _connected(self) -> Any:
        if self._client is None:
            kwargs: dict[str, Any] = {}
            if not self.dsn.startswith("chdb:"):
                kwargs = {"connect_timeout": self._timeout_s, "send_receive_timeout": self._timeout_s}
            self._client = clickhouse_connect.get_client(dsn=self.dsn, **kwargs)
        return self._client

    def _rows(self, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        rows: list[tuple[Any, ...]] = self._connected().query(sql, parameters=params).result_rows
        return rows

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        def locked() -> T:
            with self._lock:
                try:
                    return fn(*args)
                except ClickHouseError as exc:
                    if "UNKNOWN_TABLE" in str(exc) or "Code: 60" in str(exc):
                        raise RunStoreUnavailable(
                            f"the ClickHouse table {self.table} does not exist yet: no run has been stored"
                        ) from exc
                    raise RunStoreUnavailable(f"ClickHouse did not answer: {str(exc)[:300]}") from exc
                except Exception as exc:  # chdb cannot open its path (another process holds it), ...
                    if isinstance(exc, RunNotFound):
                        raise
                    raise RunStoreUnavailable(f"ClickHouse cannot be read: {str(exc)[:300]}") from exc

        return await asyncio.to_thread(locked)

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await asyncio.to_thread(client.close)

    # -- filters ---------------------------------------------------------------------------------------------
    def _where(self, filters: RunFilters) -> tuple[list[str], dict[str, Any]]:
        where = [
            "occurred_at >= toDateTime64(%(since)s, 6, 'UTC')",
            "occurred_at < toDateTime64(%(until)s, 6, 'UTC')",
        ]
        params: dict[str, Any] = {"since": _time(filters.since), "until": _time(filters.until)}
        if filters.project is not None:
            where.append("project_id = %(project)s")
            params["project"] = filters.project
        if filters.agent is not None:
            where.append("agent_id = %(agent)s")
            params["agent"] = filters.agent
        return where, params

    # -- runs list -------------------------------------------------------------------------------------------
    async def list_runs(self, filters: RunFilters, cursor: Cursor | None, limit: int) -> RunPage:
        return await self._run(self._list_runs, filters, cursor, limit)

    def _list_runs(self, filters: RunFilters, cursor: Cursor | None, limit: int) -> RunPage:
        """One project: a single grouped query (the primary key bounds it). Otherwise the newest runs are found
        from the newest events first (a top-K by time, no grouping), then only those runs are aggregated."""
        if filters.project is not None:
            runs = self._summaries(filters, cursor, limit + 1, None)
        else:
            runs = self._newest_runs(filters, cursor, limit + 1)
        more = len(runs) > limit
        runs = runs[:limit]
        return RunPage(runs, runs[-1].cursor() if more and runs else None)

    def _newest_runs(self, filters: RunFilters, cursor: Cursor | None, wanted: int) -> list[RunSummary]:
        """The ``wanted`` newest qualifying runs, exactly as the grouped query would order them.

        The runs whose last event lies among the K newest events (at or before the cursor) are exactly the
        runs with the newest last events, except those tied at the oldest of the K events; their full
        aggregates (whole time range) decide the filters and the cursor. Too few: the next K events further
        back, K times 8, up to five rounds, then the single grouped query.
        """
        narrowed = filters.outcome is not None or filters.check is not None or filters.action is not None
        k = wanted * 5 * (32 if narrowed else 2)
        upper = filters.until if cursor is None else min(filters.until, cursor.last_at + _MICRO)
        seen: set[tuple[str, str]] = set()
        found: dict[tuple[str, str], RunSummary] = {}
        for _ in range(5):
            where, params = self._where(replace(filters, until=upper))
            params["k"] = k
            events = self._rows(
                f"""SELECT project_id, run_id, occurred_at FROM {self.table} WHERE {" AND ".join(where)}
                    ORDER BY occurred_at DESC LIMIT %(k)s""",  # noqa: S608 - table name validated by settings
                params,
            )
            fresh = list(dict.fromkeys((p, r) for p, r, _ in events if (p, r) not in seen))
            seen.update(fresh)
            if fresh:
                for run in self._summaries(filters, cursor, len(fresh), fresh):
                    found[(run.project_id, run.run_id)] = run
            ordered = sorted(found.values(), key=lambda r: (r.last_at, r.project_id, r.run_id), reverse=True)
            if len(events) < k:  # every event of the range was seen
                return ordered[:wanted]
            oldest = _aware(events[-1][2])
            settled = [r for r in ordered if r.last_at > oldest]
            if len(settled) >= wanted:
                return settled[:wanted]
            upper, k = oldest + _MICRO, k * 8
        return self._summaries(filters, cursor, wanted, None)

    def _summaries(
        self, filters: RunFilters, cursor: Cursor | None, limit: int, only: list[tuple[str, str]] | None
    ) -> list[RunSummary]:
        """Runs grouped over the filters' range, newest last event first; ``only`` restricts to these runs."""
        where, params = self._where(filters)
        if only is not None:
            where.append("(project_id, run_id) IN %(only)s")
            params["only"] = only
        having: list[str] = []
        if filters.outcome is not None:
            having.append(f"{_OUTCOME} = %(outcome)s")
            params["outcome"] = filters.outcome
        if filters.check is not None:
            having.append("countIf(kind = 'check' AND name = %(check)s) > 0")
            params["check"] = filters.check
        if filters.action is not None:
            having.append("countIf(action = %(action)s) > 0")
            params["action"] = filters.action
        if cursor is not None:
            having.append(
                "(last_at, project_id, run_id) < (toDateTime64(%(c_at)s, 6, 'UTC'), %(c_project)s, %(c_run)s)"
            )
            params.update(c_at=_time(cursor.last_at), c_project=cursor.project_id, c_run=cursor.run_id)
        params["limit"] = limit
        sql = f"""
            SELECT project_id, run_id, any(agent_id), any(environment), min(occurred_at) AS first_at,
                   max(occurred_at) AS last_at, count(), countIf(action = 'block'), countIf(action = 'mask'),
                   countIf(action = 'warn'), countIf(kind = 'trust' AND action = 'block'),
                   arraySort(groupUniqArrayIf(12)(name, kind = 'check'))
            FROM {self.table}
            WHERE {" AND ".join(where)}
            GROUP BY project_id, run_id
            {"HAVING " + " AND ".join(having) if having else ""}
            ORDER BY last_at DESC, project_id DESC, run_id DESC
            LIMIT %(limit)s
        """  # noqa: S608 - table name validated by settings; values are bound parameters
        return [
            RunSummary(
                project_id=r[0],
                run_id=r[1],
                agent_id=r[2],
                environment=r[3],
                first_at=_aware(r[4]),
                last_at=_aware(r[5]),
                events=int(r[6]),
                blocks=int(r[7]),
                masks=int(r[8]),
                warns=int(r[9]),
                trust_rejections=int(r[10]),
                checks=tuple(r[11]),
            )
            for r in self._rows(sql, params)
        ]

    # -- one run ---------------------------------------------------------------------------------------------
    async def run(self, run_id: str, project_id: str | None) -> RunDetail:
        return await self._run(self._one_run, run_id, project_id)

    def _one_run(self, run_id: str, project_id: str | None) -> RunDetail:
        params: dict[str, Any] = {"run": run_id, "limit": MAX_RUN_EVENTS}
        where = "run_id = %(run)s"
        if project_id is not None:
            where += " AND project_id = %(project)s"
            params["project"] = project_id
        sql = f"""
            SELECT event_id, kind, name, occurred_at, session_id, action, payload, project_id, agent_id,
                   environment, prompt_name, prompt_version, correlation_id, labels
            FROM {self.table} WHERE {where}
            ORDER BY project_id, occurred_at, event_id LIMIT 1 BY event_id LIMIT %(limit)s
        """  # noqa: S608 - table name validated by settings
        rows = self._rows(sql, params)
        if not rows:
            raise RunNotFound(run_id)
        first = rows[0]
        rows = [r for r in rows if r[7] == first[7]]  # one project's run (a run id reused across projects)
        labels = _payload(first[13])
        return RunDetail(
            project_id=first[7],
            run_id=run_id,
            agent_id=first[8],
            environment=first[9],
            prompt_name=first[10],
            prompt_version=first[11],
            correlation_id=first[12],
            labels={str(k): str(v) for k, v in labels.items()},
            events=[
                RunEvent(r[0], r[1], r[2], _aware(r[3]), r[4], r[5], _payload(r[6]))
                for r in sorted(rows, key=lambda r: (r[3], r[0]))
            ],
        )

    # -- export ----------------------------------------------------------------------------------------------
    async def export(self, filters: RunFilters, limit: int) -> list[dict[str, Any]]:
        return await self._run(self._export, filters, limit)

    def _export(self, filters: RunFilters, limit: int) -> list[dict[str, Any]]:
        where, params = self._where(filters)
        if filters.check is not None:
            where.append("name = %(check)s")
            params["check"] = filters.check
        if filters.action is not None:
            where.append("action = %(action)s")
            params["action"] = filters.action
        if filters.outcome is not None:
            inner, _ = self._where(filters)
            runs = (
                f"SELECT project_id, run_id FROM {self.table} WHERE {' AND '.join(inner)} "  # noqa: S608 - as above
                f"GROUP BY project_id, run_id HAVING {_OUTCOME} = %(outcome)s"
            )
            where.append(f"(project_id, run_id) IN ({runs})")
            params["outcome"] = filters.outcome
        params["limit"] = limit
        sql = f"""
            SELECT occurred_at, event_id, run_id, project_id, agent_id, environment, session_id, kind, name,
                   action, payload
            FROM {self.table} WHERE {" AND ".join(where)}
            ORDER BY occurred_at DESC, event_id LIMIT %(limit)s
        """  # noqa: S608 - table name validated by settings
        out: list[dict[str, Any]] = []
        for r in self._rows(sql, params):
            payload = _payload(r[10])
            event = RunEvent(r[1], r[7], r[8], _aware(r[0]), r[6], r[9], payload)
            record = dict(zip(EXPORT_FIELDS[:10], (_aware(r[0]).isoformat(), *r[1:10]), strict=True))
            record.update(
                stage=event.stage,
                duration_ms=event.duration_ms,
                score=event.score,
                finding_types=event.finding_types,
                payload=payload,
            )
            out.append(record)
        return out

    # -- overview --------------------------------------------------------------------------------------------
    async def overview(self, filters: RunFilters, now: datetime) -> Overview:
        return await self._run(self._overview, filters, now)

    def _overview(self, filters: RunFilters, now: datetime) -> Overview:
        hours = filters.range_hours()
        bucket_s = 3600 if hours <= 48 else 6 * 3600 if hours <= 24 * 14 else 86400
        where, params = self._where(filters)
        checks = list(where)
        if filters.check is not None:
            checks.append("name = %(check)s")
            params["check"] = filters.check
        cond = " AND ".join(checks)
        params["bucket"] = bucket_s
        decisions: dict[str, dict[datetime, tuple[int, int]]] = {}
        for name, bucket, blocks, masks in self._rows(
            f"""SELECT name, toStartOfInterval(occurred_at, toIntervalSecond(%(bucket)s)) AS b,
                       countIf(action = 'block'), countIf(action = 'mask')
                FROM {self.table} WHERE kind = 'check' AND action IN ('block', 'mask') AND {cond}
                GROUP BY name, b ORDER BY name, b""",  # noqa: S608
            params,
        ):
            decisions.setdefault(name, {})[_aware(bucket)] = (int(blocks), int(masks))
        # One read of the payload column for latency, finding types and trust reasons (it is the widest column
        # and, with the table ordered by run, a time range reads it from every granule).
        check_cond = "kind = 'check'" + (" AND name = %(check)s" if filters.check is not None else "")
        latency: list[tuple[str, int, float, float, float]] = []
        findings: dict[str, int] = {}
        trust: list[tuple[str, int]] = []
        for kind, key, n, q, (types, counts) in self._rows(
            f"""SELECT kind, key, count(), quantiles(0.5, 0.95, 0.99)(d), sumMap(fk, fv) FROM (
                  SELECT kind, if(kind = 'trust', JSONExtractString(payload, 'reason'), name) AS key,
                         {_DURATION} AS d,
                         if(kind = 'check' AND position(payload, '"finding_types"') > 0
                              AND position(payload, '"finding_types": {{}}') = 0
                              AND position(payload, '"finding_types":{{}}') = 0,
                            JSONExtractKeysAndValues(payload, 'finding_types', 'Int64'), []) AS kv,
                         arrayMap(x -> x.1, kv) AS fk, arrayMap(x -> x.2, kv) AS fv
                  FROM {self.table}
                  WHERE (({check_cond}) OR (kind = 'trust' AND action = 'block')) AND {" AND ".join(where)})
                GROUP BY kind, key""",  # noqa: S608 - table name validated by settings
            params,
        ):
            if kind == "trust":
                trust.append((str(key) or "(no reason)", int(n)))
                continue
            latency.append((str(key), int(n), float(q[0]), float(q[1]), float(q[2])))
            for t, c in zip(types, counts, strict=True):
                findings[str(t)] = findings.get(str(t), 0) + int(c)
        latency.sort()
        top = sorted(findings.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
        trust = sorted(trust, key=lambda kv: (-kv[1], kv[0]))[:10]
        return Overview(
            bucket_s, _buckets(filters, bucket_s), decisions, top, latency, trust, self._today(filters, now)
        )

    def _today(self, filters: RunFilters, now: datetime) -> list[tuple[str, int, float]]:
        """Blocks, masks and trust rejections today (UTC) against the daily average of the 7 days before."""
        start = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        scoped = RunFilters(start - timedelta(days=7), now, filters.project, filters.agent)
        where, params = self._where(scoped)
        params["today"] = _time(start)
        row = self._rows(
            f"""SELECT
                  countIf(kind = 'check' AND action = 'block' AND occurred_at >= toDateTime64(%(today)s, 6, 'UTC')),
                  countIf(kind = 'check' AND action = 'block' AND occurred_at < toDateTime64(%(today)s, 6, 'UTC')),
                  countIf(kind = 'check' AND action = 'mask' AND occurred_at >= toDateTime64(%(today)s, 6, 'UTC')),
                  countIf(kind = 'check' AND action = 'mask' AND occurred_at < toDateTime64(%(today)s, 6, 'UTC')),
                  countIf(kind = 'trust' AND action = 'block' AND occurred_at >= toDateTime64(%(today)s, 6, 'UTC')),
                  countIf(kind = 'trust' AND action = 'block' AND occurred_at < toDateTime64(%(today)s, 6, 'UTC'))
                FROM {self.table} WHERE {" AND ".join(where)}""",  # noqa: S608
            params,
        )[0]
        return [
            ("Check blocks", int(row[0]), int(row[1]) / 7),
            ("Check masks", int(row[2]), int(row[3]) / 7),
            ("Trust rejections", int(row[4]), int(row[5]) / 7),
        ]


def _buckets(filters: RunFilters, bucket_s: int) -> list[datetime]:
    start = int(filters.since.timestamp()) // bucket_s * bucket_s
    end = filters.until.timestamp()
    out: list[datetime] = []
    t = start
    while t < end and len(out) < 400:
        out.append(datetime.fromtimestamp(t, UTC))
        t += bucket_s
    return out
