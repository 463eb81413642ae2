"""Runs read from MongoDB: the collection the MongoDB sink writes (one flat document per event, ``payload`` as
a sub-document, ``occurred_at`` a date; indexes ``event_id`` unique and ``(run_id, occurred_at)``).

A run page uses the ``(run_id, occurred_at)`` index. The runs list and the export are aggregation pipelines and
sorted finds over the query's time range (keyset paged); with no index on ``occurred_at`` they scan the
collection (README, "Which store"; not measured at scale). The overview reads the range's check events
(projected to a few fields) and computes the percentiles here: a range holding more than ``max_scan`` of them is
refused with a message that says to narrow it, so memory stays bounded.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from pymongo.errors import PyMongoError

from stockade.contracts.run_store import (
    MAX_RUN_EVENTS,
    ExportCursor,
    Overview,
    RunCursor,
    RunDetail,
    RunQuery,
    RunScope,
    RunSummary,
)
from stockade.guardrail_ingest.reads import RunNotFound, RunStoreUnavailable
from stockade.guardrail_ingest.reads.aggregate import export_row, overview_from, run_detail


def _aware(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _count_if(condition: dict[str, Any]) -> dict[str, Any]:
    return {"$sum": {"$cond": [condition, 1, 0]}}


def _eq(field: str, value: Any) -> dict[str, Any]:
    return {"$eq": [f"${field}", value]}


def _in_scope(scope: RunScope) -> dict[str, Any]:
    """The ``project_id`` condition of ``scope`` (a record without a project: null, missing or empty)."""
    ids: list[str | None] = list(scope.stored_ids())
    return {"$in": [*ids, None] if scope.unowned else ids}


class MongoRunReader:
    kind = "mongodb"

    def __init__(self, collection: Any, *, max_scan: int = 200_000) -> None:
        self.collection = collection
        self.max_scan = max_scan

    async def _aggregate(self, pipeline: list[dict[str, Any]]) -> list[dict[str, Any]]:
        try:
            cursor = await self.collection.aggregate(pipeline)
            return [doc async for doc in cursor]
        except PyMongoError as exc:
            raise RunStoreUnavailable(f"MongoDB did not answer: {str(exc)[:300]}") from exc

    async def _find(self, query: dict[str, Any], fields: dict[str, Any]) -> list[dict[str, Any]]:
        """At most ``max_scan`` documents; more: RunStoreUnavailable (narrow the range)."""
        try:
            docs: list[dict[str, Any]] = (
                await self.collection.find(query, fields).limit(self.max_scan + 1).to_list()
            )
        except PyMongoError as exc:
            raise RunStoreUnavailable(f"MongoDB did not answer: {str(exc)[:300]}") from exc
        if len(docs) > self.max_scan:
            raise RunStoreUnavailable(
                f"more than {self.max_scan:,} events in this range: narrow the time range, or pick a project"
            )
        return docs

    def _match(self, scope: RunScope, query: RunQuery) -> dict[str, Any]:
        match: dict[str, Any] = {"occurred_at": {"$gte": query.since, "$lt": query.until}}
        match["project_id"] = _in_scope(scope.narrowed(query.project))
        if query.agent is not None:
            match["agent_id"] = query.agent
        return match

    # -- runs list -------------------------------------------------------------------------------------------
    def _run_groups(self, scope: RunScope, query: RunQuery) -> list[dict[str, Any]]:
        is_check = _eq("kind", "check")
        group: dict[str, Any] = {
            "_id": {"p": "$project_id", "r": "$run_id"},
            "agent_id": {"$first": "$agent_id"},
            "environment": {"$first": "$environment"},
            "first_at": {"$min": "$occurred_at"},
            "last_at": {"$max": "$occurred_at"},
            "events": {"$sum": 1},
            "blocks": _count_if(_eq("action", "block")),
            "masks": _count_if(_eq("action", "mask")),
            "warns": _count_if(_eq("action", "warn")),
            "trust_rejections": _count_if({"$and": [_eq("kind", "trust"), _eq("action", "block")]}),
            "checks": {"$addToSet": {"$cond": [is_check, "$name", None]}},
        }
        having: dict[str, Any] = {}
        if query.check is not None:
            group["has_check"] = _count_if({"$and": [is_check, _eq("name", query.check)]})
            having["has_check"] = {"$gt": 0}
        if query.action is not None:
            group["has_action"] = _count_if(_eq("action", query.action))
            having["has_action"] = {"$gt": 0}
        if query.outcome == "block":
            having["blocks"] = {"$gt": 0}
        elif query.outcome == "mask":
            having.update(blocks=0, masks={"$gt": 0})
        elif query.outcome == "warn":
            having.update(blocks=0, masks=0, warns={"$gt": 0})
        elif query.outcome == "allow":
            having.update(blocks=0, masks=0, warns=0)
        stages: list[dict[str, Any]] = [{"$match": self._match(scope, query)}, {"$group": group}]
        if having:
            stages.append({"$match": having})
        return stages

    async def list_runs(
        self, scope: RunScope, query: RunQuery, cursor: RunCursor | None, limit: int
    ) -> tuple[list[RunSummary], bool]:
        pipeline = self._run_groups(scope, query)
        if cursor is not None:
            at, p, r = cursor.last_at, cursor.project_id, cursor.run_id
            pipeline.append(
                {
                    "$match": {
                        "$or": [
                            {"last_at": {"$lt": at}},
                            {"last_at": at, "_id.p": {"$lt": p}},
                            {"last_at": at, "_id.p": p, "_id.r": {"$lt": r}},
                        ]
                    }
                }
            )
        pipeline += [{"$sort": {"last_at": -1, "_id.p": -1, "_id.r": -1}}, {"$limit": limit + 1}]
        runs = [
            RunSummary(
                project_id=d["_id"]["p"] or "",
                run_id=d["_id"]["r"],
                agent_id=d.get("agent_id"),
                environment=d.get("environment"),
                first_at=_aware(d["first_at"]),
                last_at=_aware(d["last_at"]),
                events=int(d["events"]),
                blocks=int(d["blocks"]),
                masks=int(d["masks"]),
                warns=int(d["warns"]),
                trust_rejections=int(d["trust_rejections"]),
                checks=tuple(sorted(c for c in d.get("checks", []) if c)),
            )
            for d in await self._aggregate(pipeline)
        ]
        return runs[:limit], len(runs) > limit

    # -- one run ---------------------------------------------------------------------------------------------
    async def run(self, scope: RunScope, run_id: str, project_id: str | None) -> RunDetail:
        query: dict[str, Any] = {"run_id": run_id, "project_id": _in_scope(scope.narrowed(project_id))}
        try:
            docs = await self.collection.find(query).sort("occurred_at", 1).limit(MAX_RUN_EVENTS).to_list()
        except PyMongoError as exc:
            raise RunStoreUnavailable(f"MongoDB did not answer: {str(exc)[:300]}") from exc
        if not docs:
            raise RunNotFound(run_id)
        first = docs[0]
        docs = [d for d in docs if d.get("project_id") == first.get("project_id")]
        docs.sort(key=lambda d: (d["occurred_at"], str(d["event_id"])))
        return run_detail(run_id, docs)

    # -- export ----------------------------------------------------------------------------------------------
    async def export(
        self, scope: RunScope, query: RunQuery, after: ExportCursor | None, limit: int
    ) -> tuple[list[dict[str, Any]], bool]:
        match = self._match(scope, query)
        if query.check is not None:
            match["name"] = query.check
        if query.action is not None:
            match["action"] = query.action
        conditions: list[dict[str, Any]] = [match]
        if query.outcome is not None:
            runs = self._run_groups(
                scope,
                RunQuery(
                    since=query.since,
                    until=query.until,
                    project=query.project,
                    agent=query.agent,
                    outcome=query.outcome,
                ),
            )
            # the newest runs with that outcome, at most 10,000 (a query document stays far below 16 MiB)
            keys = await self._aggregate(
                [*runs, {"$sort": {"last_at": -1}}, {"$limit": 10_000}, {"$project": {"_id": 1}}]
            )
            conditions.append(
                {
                    "$or": [{"project_id": k["_id"]["p"], "run_id": k["_id"]["r"]} for k in keys]
                    or [{"_id": None}]
                }
            )
        if after is not None:
            at = after.occurred_at
            conditions.append(
                {
                    "$or": [
                        {"occurred_at": {"$lt": at}},
                        {"occurred_at": at, "event_id": {"$lt": after.event_id}},
                    ]
                }
            )
        try:
            docs = (
                await self.collection.find({"$and": conditions})
                .sort([("occurred_at", -1), ("event_id", -1)])
                .limit(limit + 1)
                .to_list()
            )
        except PyMongoError as exc:
            raise RunStoreUnavailable(f"MongoDB did not answer: {str(exc)[:300]}") from exc
        return [export_row(d) for d in docs[:limit]], len(docs) > limit

    # -- overview --------------------------------------------------------------------------------------------
    async def overview(self, scope: RunScope, query: RunQuery, now: datetime) -> Overview:
        bucket_s = query.bucket_seconds()
        base = self._match(scope, query)
        checks = {**base, "kind": "check", **({"name": query.check} if query.check is not None else {})}
        fields = {
            "name": 1,
            "action": 1,
            "occurred_at": 1,
            "payload.duration_ms": 1,
            "payload.finding_types": 1,
        }
        docs = await self._find(checks, fields)
        trust_docs = await self._find({**base, "kind": "trust", "action": "block"}, {"payload.reason": 1})
        start = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        week = {"occurred_at": {"$gte": start - timedelta(days=7), "$lt": now}}
        week |= {k: v for k, v in base.items() if k != "occurred_at"}
        today_docs = await self._find(
            {**week, "action": {"$in": ["block", "mask"]}, "kind": {"$in": ["check", "trust"]}},
            {"kind": 1, "action": 1, "occurred_at": 1},
        )
        return overview_from(docs, trust_docs, today_docs, query, bucket_s, start)
