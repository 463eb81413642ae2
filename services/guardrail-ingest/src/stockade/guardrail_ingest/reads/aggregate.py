"""Runs and the overview computed here from stored events, for stores that cannot aggregate them
the way the pages need (MongoDB's overview, DynamoDB): plain functions over event documents, each a dict with
the stored fields (``payload`` a dict, ``occurred_at`` a datetime)."""

from __future__ import annotations

import statistics
from datetime import UTC, datetime
from typing import Any

from stockade.contracts.run_store import (
    Overview,
    RunCursor,
    RunDetail,
    RunEvent,
    RunQuery,
    RunSummary,
)

MAX_DURATIONS = 20_000
"""Latency percentiles use at most this many durations per check."""


def _aware(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def event_from_doc(d: dict[str, Any]) -> RunEvent:
    payload = d.get("payload")
    return RunEvent(
        event_id=str(d.get("event_id")),
        kind=str(d.get("kind")),
        name=str(d.get("name")),
        occurred_at=_aware(d["occurred_at"]),
        session_id=d.get("session_id"),
        action=d.get("action"),
        payload=payload if isinstance(payload, dict) else {},
        policy_name=d.get("policy_name"),
        policy_version=d.get("policy_version"),
    )


def run_detail(run_id: str, docs: list[dict[str, Any]]) -> RunDetail:
    """A run page from its stored event documents (one project's, in timeline order): the run's labels are the
    first event's."""
    first = docs[0]
    labels = first.get("labels") or {}
    return RunDetail(
        project_id=first.get("project_id") or "",
        run_id=run_id,
        agent_id=first.get("agent_id"),
        environment=first.get("environment"),
        prompt_name=first.get("prompt_name"),
        prompt_version=first.get("prompt_version"),
        correlation_id=first.get("correlation_id"),
        labels={str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {},
        events=[event_from_doc(d) for d in docs],
    )


def export_row(d: dict[str, Any]) -> dict[str, Any]:
    """One stored event document (MongoDB or DynamoDB) as a row of the CSV/JSON export (run_store.EXPORT_FIELDS)."""
    event = event_from_doc(d)
    return {
        "occurred_at": event.occurred_at.isoformat(),
        "event_id": event.event_id,
        "run_id": d.get("run_id"),
        "project_id": d.get("project_id"),
        "agent_id": d.get("agent_id"),
        "environment": d.get("environment"),
        "session_id": event.session_id,
        "kind": event.kind,
        "name": event.name,
        "action": event.action,
        "stage": event.stage,
        "duration_ms": event.duration_ms,
        "score": event.score,
        "finding_types": event.finding_types,
        "payload": event.payload,
        "policy_name": event.policy_name,
        "policy_version": event.policy_version,
    }


def summarize_runs(docs: list[dict[str, Any]]) -> list[RunSummary]:
    """One summary per (project_id, run_id) of ``docs``, newest last event first."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for d in docs:
        groups.setdefault((str(d.get("project_id") or ""), str(d.get("run_id"))), []).append(d)
    runs = []
    for (project, run), events in groups.items():
        times = [_aware(e["occurred_at"]) for e in events]
        actions = [e.get("action") for e in events]
        runs.append(
            RunSummary(
                project_id=project,
                run_id=run,
                agent_id=events[0].get("agent_id"),
                environment=events[0].get("environment"),
                first_at=min(times),
                last_at=max(times),
                events=len(events),
                blocks=actions.count("block"),
                masks=actions.count("mask"),
                warns=actions.count("warn"),
                trust_rejections=sum(
                    1 for e in events if e.get("kind") == "trust" and e.get("action") == "block"
                ),
                checks=tuple(sorted({str(e.get("name")) for e in events if e.get("kind") == "check"})),
            )
        )
    runs.sort(key=lambda r: (r.last_at, r.project_id, r.run_id), reverse=True)
    return runs


def runs_matching(docs: list[dict[str, Any]], query: RunQuery, cursor: RunCursor | None) -> list[RunSummary]:
    """The runs of ``docs`` that pass the run filters (outcome, check, action) and come after ``cursor``."""
    by_run: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for d in docs:
        by_run.setdefault((str(d.get("project_id") or ""), str(d.get("run_id"))), []).append(d)
    out = []
    for run in summarize_runs(docs):
        events = by_run[(run.project_id, run.run_id)]
        if query.outcome is not None and run.outcome != query.outcome:
            continue
        if query.check is not None and not any(
            e.get("kind") == "check" and e.get("name") == query.check for e in events
        ):
            continue
        if query.action is not None and not any(e.get("action") == query.action for e in events):
            continue
        if cursor is not None and (run.last_at, run.project_id, run.run_id) >= (
            cursor.last_at,
            cursor.project_id,
            cursor.run_id,
        ):
            continue
        out.append(run)
    return out


def overview_from(
    docs: list[dict[str, Any]],
    trust_docs: list[dict[str, Any]],
    today_docs: list[dict[str, Any]],
    query: RunQuery,
    bucket_s: int,
    start: datetime,
) -> Overview:
    """The overview from the range's check events, its trust rejections, and the block/mask/trust-rejection
    events of the 7 days before today (UTC midnight ``start``) until now."""
    decisions: dict[str, dict[datetime, tuple[int, int]]] = {}
    durations: dict[str, list[float]] = {}
    counts: dict[str, int] = {}
    findings: dict[str, int] = {}
    for d in docs:
        name, action = str(d.get("name")), d.get("action")
        event = event_from_doc({**d, "event_id": "", "kind": "check"})
        counts[name] = counts.get(name, 0) + 1
        if event.duration_ms is not None and len(durations.setdefault(name, [])) < MAX_DURATIONS:
            durations[name].append(event.duration_ms)
        for t, n in event.finding_types.items():
            findings[t] = findings.get(t, 0) + n
        if action in ("block", "mask"):
            at = _aware(d["occurred_at"])
            bucket = datetime.fromtimestamp(int(at.timestamp()) // bucket_s * bucket_s, UTC)
            b, m = decisions.setdefault(name, {}).get(bucket, (0, 0))
            decisions[name][bucket] = (b + (action == "block"), m + (action == "mask"))
    latency = [(name, counts[name], *_percentiles(durations.get(name, []))) for name in sorted(counts)]
    reasons: dict[str, int] = {}
    for d in trust_docs:
        reason = str((d.get("payload") or {}).get("reason") or "") or "(no reason)"
        reasons[reason] = reasons.get(reason, 0) + 1
    today = {"check block": [0, 0], "check mask": [0, 0], "trust block": [0, 0]}
    for d in today_docs:
        key = f"{d.get('kind')} {d.get('action')}"
        if key in today:
            today[key][0 if _aware(d["occurred_at"]) >= start else 1] += 1
    return Overview(
        bucket_s=bucket_s,
        buckets=query.buckets(bucket_s),
        decisions=decisions,
        top_findings=sorted(findings.items(), key=lambda kv: (-kv[1], kv[0]))[:10],
        latency=latency,
        trust_rejections=sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))[:10],
        today=[
            ("Check blocks", today["check block"][0], today["check block"][1] / 7),
            ("Check masks", today["check mask"][0], today["check mask"][1] / 7),
            ("Trust rejections", today["trust block"][0], today["trust block"][1] / 7),
        ],
    )


def _percentiles(values: list[float]) -> tuple[float, float, float]:
    if not values:
        return (0.0, 0.0, 0.0)
    if len(values) == 1:
        return (values[0], values[0], values[0])
    q = statistics.quantiles(values, n=100, method="inclusive")
    return (q[49], q[94], q[98])
