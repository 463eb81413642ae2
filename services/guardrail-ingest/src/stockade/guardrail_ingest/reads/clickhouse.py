"""Runs read from ClickHouse (a server, or embedded chdb): the table the ClickHouse sink creates
(``ReplacingMergeTree``, ``ORDER BY (project_id, run_id, event_id)``, partitioned by month).

Every query is bounded by the query's time range (partition pruning on ``occurred_at``) and, when a project is
given, by the primary key. A run is a ``(project_id, run_id)`` group; the runs list is ordered by each run's last
event, newest first, and paged with a keyset cursor (no OFFSET); the export pages the same way on
``(occurred_at, event_id)``. Queries do not use ``FINAL`` (its cost on the large ranges these pages read): the
sink stores each delivered batch once, so the counts are exact except after a client re-sends a batch later than
JetStream's duplicate window (two minutes), whose second copy counts twice until ClickHouse merges the part
(README, "Reading the run table").

The queries run through the sink's own read connection (``ClickHouseSink.read_rows``: ``readonly = 1``; chdb
allows one engine per path per process, so the sink's lock orders them with the writes), in a thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, TypeVar

from clickhouse_connect.driver.exceptions import ClickHouseError

from stockade.contracts.run_store import (
    EXPORT_FIELDS,
    MAX_RUN_EVENTS,
    ExportCursor,
    Overview,
    RunCursor,
    RunDetail,
    RunEvent,
    RunQuery,
    RunScope,
    RunSummary,
)
from stockade.guardrail_ingest.reads import RunNotFound, RunStoreUnavailable
from stockade.guardrail_ingest.reads import clickhouse_sql as ch
from stockade.guardrail_ingest.reads.clickhouse_overview import overview

T = TypeVar("T")
MICROSECOND = timedelta(microseconds=1)
Rows = Callable[[str, dict[str, Any]], list[tuple[Any, ...]]]


class ClickHouseRunReader:
    kind = "clickhouse"

    def __init__(self, rows: Rows, table: str) -> None:
        self._rows = rows
        self.table = table

    # -- plumbing ---------------------------------------------------------------------------------------------
    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        def guarded() -> T:
            try:
                return fn(*args)
            except ClickHouseError as exc:
                if "UNKNOWN_TABLE" in str(exc) or "Code: 60" in str(exc):
                    raise RunStoreUnavailable(
                        f"the ClickHouse table {self.table} does not exist yet: no run has been stored"
                    ) from exc
                raise RunStoreUnavailable(f"ClickHouse did not answer: {str(exc)[:300]}") from exc
            except (RunNotFound, RunStoreUnavailable):
                raise
            except Exception as exc:  # chdb cannot open its path, a connection dropped, ...
                raise RunStoreUnavailable(f"ClickHouse cannot be read: {str(exc)[:300]}") from exc

        return await asyncio.to_thread(guarded)

    # -- runs list -------------------------------------------------------------------------------------------
    async def list_runs(
        self, scope: RunScope, query: RunQuery, cursor: RunCursor | None, limit: int
    ) -> tuple[list[RunSummary], bool]:
        return await self._run(self._list_runs, scope, query, cursor, limit)

    def _list_runs(
        self, scope: RunScope, query: RunQuery, cursor: RunCursor | None, limit: int
    ) -> tuple[list[RunSummary], bool]:
        """One project: a single grouped query (the primary key bounds it). Otherwise the newest runs are found
        from the newest events first (a top-K by time, no grouping), then only those runs are aggregated."""
        if query.project is not None:
            runs = self._summaries(scope, query, cursor, limit + 1, None)
        else:
            runs = self._newest_runs(scope, query, cursor, limit + 1)
        return runs[:limit], len(runs) > limit

    def _newest_runs(
        self, scope: RunScope, query: RunQuery, cursor: RunCursor | None, wanted: int
    ) -> list[RunSummary]:
        """The ``wanted`` newest qualifying runs, exactly as the grouped query would order them.

        The runs whose last event lies among the K newest events (at or before the cursor) are exactly the
        runs with the newest last events, except those tied at the oldest of the K events; their full
        aggregates (whole time range) decide the filters and the cursor. Too few: the next K events further
        back, K times 8, up to five rounds, then the single grouped query.
        """
        narrowed = query.outcome is not None or query.check is not None or query.action is not None
        k = wanted * 5 * (32 if narrowed else 2)
        upper = query.until if cursor is None else min(query.until, cursor.last_at + MICROSECOND)
        seen: set[tuple[str, str]] = set()
        found: dict[tuple[str, str], RunSummary] = {}
        for _ in range(5):
            where, params = ch.where(scope, query.model_copy(update={"until": upper}))
            params["k"] = k
            events = self._rows(
                f"""SELECT project_id, run_id, occurred_at FROM {self.table} WHERE {" AND ".join(where)}
                    ORDER BY occurred_at DESC LIMIT %(k)s""",  # noqa: S608 - table name validated by settings
                params,
            )
            fresh = list(dict.fromkeys((p, r) for p, r, _ in events if (p, r) not in seen))
            seen.update(fresh)
            if fresh:
                for run in self._summaries(scope, query, cursor, len(fresh), fresh):
                    found[(run.project_id, run.run_id)] = run
            ordered = sorted(found.values(), key=lambda r: (r.last_at, r.project_id, r.run_id), reverse=True)
            if len(events) < k:  # every event of the range was seen
                return ordered[:wanted]
            oldest = ch.aware(events[-1][2])
            settled = [r for r in ordered if r.last_at > oldest]
            if len(settled) >= wanted:
                return settled[:wanted]
            upper, k = oldest + MICROSECOND, k * 8
        return self._summaries(scope, query, cursor, wanted, None)

    def _summaries(
        self,
        scope: RunScope,
        query: RunQuery,
        cursor: RunCursor | None,
        limit: int,
        only: list[tuple[str, str]] | None,
    ) -> list[RunSummary]:
        """Runs grouped over the query's range, newest last event first; ``only`` restricts to these runs."""
        where, params = ch.where(scope, query)
        ch.narrow(where, params, "(project_id, run_id) IN %(only)s", "only", only)
        having: list[str] = []
        ch.narrow(having, params, f"{ch.OUTCOME} = %(outcome)s", "outcome", query.outcome)
        ch.narrow(having, params, "countIf(kind = 'check' AND name = %(check)s) > 0", "check", query.check)
        ch.narrow(having, params, "countIf(action = %(action)s) > 0", "action", query.action)
        if cursor is not None:
            having.append(
                "(last_at, project_id, run_id) < (toDateTime64(%(c_at)s, 6, 'UTC'), %(c_project)s, %(c_run)s)"
            )
            params.update(
                c_at=ch.time_param(cursor.last_at), c_project=cursor.project_id, c_run=cursor.run_id
            )
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
                first_at=ch.aware(r[4]),
                last_at=ch.aware(r[5]),
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
    async def run(self, scope: RunScope, run_id: str, project_id: str | None) -> RunDetail:
        return await self._run(self._one_run, scope, run_id, project_id)

    def _one_run(self, scope: RunScope, run_id: str, project_id: str | None) -> RunDetail:
        params: dict[str, Any] = {"run": run_id, "limit": MAX_RUN_EVENTS}
        where = "run_id = %(run)s AND " + ch.in_scope(scope.narrowed(project_id), params)
        sql = f"""
            SELECT event_id, kind, name, occurred_at, session_id, action, payload, project_id, agent_id,
                   environment, prompt_name, prompt_version, correlation_id, labels, policy_name,
                   policy_version
            FROM {self.table} WHERE {where}
            ORDER BY project_id, occurred_at, event_id LIMIT 1 BY event_id LIMIT %(limit)s
        """  # noqa: S608 - table name validated by settings
        rows = self._rows(sql, params)
        if not rows:
            raise RunNotFound(run_id)
        first = rows[0]
        rows = [r for r in rows if r[7] == first[7]]  # one project's run (a run id reused across projects)
        labels = ch.payload_of(first[13])
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
                RunEvent(
                    event_id=r[0],
                    kind=r[1],
                    name=r[2],
                    occurred_at=ch.aware(r[3]),
                    session_id=r[4],
                    action=r[5],
                    payload=ch.payload_of(r[6]),
                    policy_name=r[14],
                    policy_version=r[15],
                )
                for r in sorted(rows, key=lambda r: (r[3], r[0]))
            ],
        )

    # -- export ----------------------------------------------------------------------------------------------
    async def export(
        self, scope: RunScope, query: RunQuery, after: ExportCursor | None, limit: int
    ) -> tuple[list[dict[str, Any]], bool]:
        return await self._run(self._export, scope, query, after, limit)

    def _export(
        self, scope: RunScope, query: RunQuery, after: ExportCursor | None, limit: int
    ) -> tuple[list[dict[str, Any]], bool]:
        where, params = ch.where(scope, query)
        ch.narrow(where, params, "name = %(check)s", "check", query.check)
        ch.narrow(where, params, "action = %(action)s", "action", query.action)
        if query.outcome is not None:
            inner, _ = ch.where(scope, query)
            runs = (
                f"SELECT project_id, run_id FROM {self.table} WHERE {' AND '.join(inner)} "  # noqa: S608 - as above
                f"GROUP BY project_id, run_id HAVING {ch.OUTCOME} = %(outcome)s"
            )
            where.append(f"(project_id, run_id) IN ({runs})")
            params["outcome"] = query.outcome
        if after is not None:
            where.append("(occurred_at, event_id) < (toDateTime64(%(a_at)s, 6, 'UTC'), %(a_id)s)")
            params.update(a_at=ch.time_param(after.occurred_at), a_id=after.event_id)
        params["limit"] = limit + 1
        sql = f"""
            SELECT occurred_at, event_id, run_id, project_id, agent_id, environment, session_id, kind, name,
                   action, payload, policy_name, policy_version
            FROM {self.table} WHERE {" AND ".join(where)}
            ORDER BY occurred_at DESC, event_id DESC LIMIT %(limit)s
        """  # noqa: S608 - table name validated by settings
        out: list[dict[str, Any]] = []
        rows = self._rows(sql, params)
        for r in rows[:limit]:
            payload = ch.payload_of(r[10])
            event = RunEvent(
                event_id=r[1],
                kind=r[7],
                name=r[8],
                occurred_at=ch.aware(r[0]),
                session_id=r[6],
                action=r[9],
                payload=payload,
            )
            record = dict(zip(EXPORT_FIELDS[:10], (ch.aware(r[0]).isoformat(), *r[1:10]), strict=True))
            record.update(
                stage=event.stage,
                duration_ms=event.duration_ms,
                score=event.score,
                finding_types=event.finding_types,
                payload=payload,
                policy_name=r[11],
                policy_version=r[12],
            )
            out.append(record)
        return out, len(rows) > limit

    # -- overview --------------------------------------------------------------------------------------------
    async def overview(self, scope: RunScope, query: RunQuery, now: datetime) -> Overview:
        return await self._run(overview, self._rows, self.table, scope, query, now)
