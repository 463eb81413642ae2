"""The overview's queries on ClickHouse: decisions per check and time bucket, then one read of the payload
column for latency, finding types and trust reasons, then today's counts against the week before."""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from stockade.contracts.run_store import Overview, RunQuery, RunScope
from stockade.guardrail_ingest.reads import clickhouse_sql as ch

Rows = Callable[[str, dict[str, Any]], list[tuple[Any, ...]]]
"""Runs a query with its parameters and returns the rows."""


def overview(rows: Rows, table: str, scope: RunScope, query: RunQuery, now: datetime) -> Overview:
    """The overview page: decisions per check and bucket, latency, finding types, trust reasons, today."""
    bucket_s = query.bucket_seconds()
    where, params = ch.where(scope, query)
    checks = list(where)
    ch.narrow(checks, params, "name = %(check)s", "check", query.check)
    cond = " AND ".join(checks)
    params["bucket"] = bucket_s
    decisions: dict[str, dict[datetime, tuple[int, int]]] = {}
    for name, bucket, blocks, masks in rows(
        f"""SELECT name, toStartOfInterval(occurred_at, toIntervalSecond(%(bucket)s)) AS b,
                   countIf(action = 'block'), countIf(action = 'mask')
            FROM {table} WHERE kind = 'check' AND action IN ('block', 'mask') AND {cond}
            GROUP BY name, b ORDER BY name, b""",  # noqa: S608
        params,
    ):
        decisions.setdefault(name, {})[ch.aware(bucket)] = (int(blocks), int(masks))
    # One read of the payload column for latency, finding types and trust reasons (it is the widest column
    # and, with the table ordered by run, a time range reads it from every granule).
    check_cond = "kind = 'check'" + (" AND name = %(check)s" if query.check is not None else "")
    latency: list[tuple[str, int, float, float, float]] = []
    findings: dict[str, int] = {}
    trust: list[tuple[str, int]] = []
    for kind, key, n, q, (types, counts) in rows(
        f"""SELECT kind, key, count(), quantiles(0.5, 0.95, 0.99)(d), sumMap(fk, fv) FROM (
              SELECT kind, if(kind = 'trust', JSONExtractString(payload, 'reason'), name) AS key,
                     {ch.DURATION} AS d,
                     if(kind = 'check' AND position(payload, '"finding_types"') > 0
                          AND position(payload, '"finding_types": {{}}') = 0
                          AND position(payload, '"finding_types":{{}}') = 0,
                        JSONExtractKeysAndValues(payload, 'finding_types', 'Int64'), []) AS kv,
                     arrayMap(x -> x.1, kv) AS fk, arrayMap(x -> x.2, kv) AS fv
              FROM {table}
              WHERE (({check_cond}) OR (kind = 'trust' AND action = 'block')) AND {" AND ".join(where)})
            GROUP BY kind, key""",  # noqa: S608 - table name validated by settings
        params,
    ):
        if kind == "trust":
            trust.append((str(key) or "(no reason)", int(n)))
            continue
        latency.append((str(key), int(n), _ms(q[0]), _ms(q[1]), _ms(q[2])))
        for t, c in zip(types, counts, strict=True):
            findings[str(t)] = findings.get(str(t), 0) + int(c)
    latency.sort()
    top = sorted(findings.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
    trust = sorted(trust, key=lambda kv: (-kv[1], kv[0]))[:10]
    return Overview(
        bucket_s=bucket_s,
        buckets=query.buckets(bucket_s),
        decisions=decisions,
        top_findings=top,
        latency=latency,
        trust_rejections=trust,
        today=_today(rows, table, scope, query, now),
    )


def _ms(value: Any) -> float:
    """A quantile in ms; 0 for the NaN of a check with no duration (JSON has no NaN)."""
    number = float(value)
    return 0.0 if math.isnan(number) else number


def _today(
    rows: Rows, table: str, scope: RunScope, query: RunQuery, now: datetime
) -> list[tuple[str, int, float]]:
    """Blocks, masks and trust rejections today (UTC) against the daily average of the 7 days before."""
    start = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    scoped = RunQuery(since=start - timedelta(days=7), until=now, project=query.project, agent=query.agent)
    where, params = ch.where(scope, scoped)
    params["today"] = ch.time_param(start)
    row = rows(
        f"""SELECT
              countIf(kind = 'check' AND action = 'block' AND occurred_at >= toDateTime64(%(today)s, 6, 'UTC')),
              countIf(kind = 'check' AND action = 'block' AND occurred_at < toDateTime64(%(today)s, 6, 'UTC')),
              countIf(kind = 'check' AND action = 'mask' AND occurred_at >= toDateTime64(%(today)s, 6, 'UTC')),
              countIf(kind = 'check' AND action = 'mask' AND occurred_at < toDateTime64(%(today)s, 6, 'UTC')),
              countIf(kind = 'trust' AND action = 'block' AND occurred_at >= toDateTime64(%(today)s, 6, 'UTC')),
              countIf(kind = 'trust' AND action = 'block' AND occurred_at < toDateTime64(%(today)s, 6, 'UTC'))
            FROM {table} WHERE {" AND ".join(where)}""",  # noqa: S608
        params,
    )[0]
    return [
        ("Check blocks", int(row[0]), int(row[1]) / 7),
        ("Check masks", int(row[2]), int(row[3]) / 7),
        ("Trust rejections", int(row[4]), int(row[5]) / 7),
    ]
