"""Run pages read from MongoDB: the collection guardrail-ingest's MongoDB sink writes (one flat document per
event, ``payload`` as a sub-document, ``occurred_at`` a date; indexes ``event_id`` unique and
``(run_id, occurred_at)``).

A run page uses the ``(run_id, occurred_at)`` index. The runs list, the overview and the export are aggregation
pipelines over the filters' time range; with no index on ``occurred_at`` they scan the collection (README,
"Which store"; not measured at scale). Percentiles are computed here from the
durations of the range, at most ``_MAX_DURATIONS`` per check.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from pymongo.errors import PyMongoError

from stockade.model_api.run_aggregate import export_row, overview_from, run_detail
from stockade.model_api.run_filters import Cursor, RunFilters
from stockade.model_api.run_store import (
    MAX_RUN_EVENTS,
    Overview,
    ProjectScope,
    RunDetail,
    RunNotFound,
    RunPage,
    RunStoreUnavailable,
    RunSummary,
)
from stockade.runtime.mongo import open_collection


def _aware(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _count_if(condition: dict[str, Any]) -> dict[str, Any]:
    return {"$sum": {"$cond": [condition, 1, 0]}}


def _eq(field: str, value: Any) -> dict[str, Any]:
    return {"$eq": [f"${field}", value]}


def _in_scope(scope: ProjectScope) -> dict[str, Any]:
    """The ``project_id`` condition of ``scope`` (a record without a project: null, missing or empty)."""
    ids: list[str | None] = list(scope.stored_ids())
    return {"$in": [*ids, None] if scope.unowned else ids}


class MongoRunReader:
    kind = "mongodb"

    def __init__(self, url: str, collection: str, *, timeout_s: float = 10.0) -> None:
        self._client, self.collection = open_collection(url, collection, timeout_s=timeout_s)

    async def aclose(self) -> None:
        await self._client.close()

    async def _aggregate(self, pipeline: list[dict[str, Any]]) -> list[dict[str, Any]]:
        try:
            cursor = await self.collection.aggregate(pipeline)
            return [doc async for doc in cursor]
        except PyMongoError as exc:
            raise RunStoreUnavailable(f"MongoDB did not answer: {str(exc)[:300]}") from exc

    def _match(self, scope: ProjectScope, filters: RunFilters) -> dict[str, Any]:
        match: dict[str, Any] = {"occurred_at": {"$gte": filters.since, "$lt": filters.until}}
        match["project_id"] = _in_scope(scope.narrowed(filters.project))
        if filters.agent is not None:
            match["agent_id"] = filters.agent
        return match

    # -- runs list -------------------------------------------------------------------------------------------
    def _run_groups(self, scope: ProjectScope, filters: RunFilters) -> list[dict[str, Any]]:
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
        if filters.check is not None:
            group["has_check"] = _count_if({"$and": [is_check, _eq("name", filters.check)]})
            having["has_check"] = {"$gt": 0}
        if filters.action is not None:
            group["has_action"] = _count_if(_eq("action", filters.action))
            having["has_action"] = {"$gt": 0}
        if filters.outcome == "block":
            having["blocks"] = {"$gt": 0}
        elif filters.outcome == "mask":
            having.update(blocks=0, masks={"$gt": 0})
        elif filters.outcome == "warn":
            having.update(blocks=0, masks=0, warns={"$gt": 0})
        elif filters.outcome == "allow":
            having.update(blocks=0, masks=0, warns=0)
        stages: list[dict[str, Any]] = [{"$match": self._match(scope, filters)}, {"$group": group}]
        if having:
            stages.append({"$match": having})
        return stages

    async def list_runs(
        self, scope: ProjectScope, filters: RunFilters, cursor: Cursor | None, limit: int
    ) -> RunPage:
        pipeline = self._run_groups(scope, filters)
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
                project_id=d["_id"]["p"],
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
        more = len(runs) > limit
        runs = runs[:limit]
        return RunPage(runs, runs[-1].cursor() if more and runs else None)

    # -- one run ---------------------------------------------------------------------------------------------
    async def run(self, scope: ProjectScope, run_id: str, project_id: str | None) -> RunDetail:
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
    async def export(self, scope: ProjectScope, filters: RunFilters, limit: int) -> list[dict[str, Any]]:
        match = self._match(scope, filters)
        if filters.check is not None:
            match["name"] = filters.check
        if filters.action is not None:
            match["action"] = filters.action
        if filters.outcome is not None:
            runs = self._run_groups(
                scope,
                RunFilters(filters.since, filters.until, filters.project, filters.agent, filters.outcome),
            )
            # the newest runs with that outcome, at most 10,000 (a query document stays far below 16 MiB)
            keys = await self._aggregate(
                [*runs, {"$sort": {"last_at": -1}}, {"$limit": 10_000}, {"$project": {"_id": 1}}]
            )
            match["$or"] = [{"project_id": k["_id"]["p"], "run_id": k["_id"]["r"]} for k in keys] or [
                {"_id": None}
            ]
        try:
            docs = (
                await self.collection.find(match)
                .sort([("occurred_at", -1), ("event_id", 1)])
                .limit(limit)
                .to_list()
            )
        except PyMongoError as exc:
            raise RunStoreUnavailable(f"MongoDB did not answer: {str(exc)[:300]}") from exc
        return [export_row(d) for d in docs]

    # -- overview --------------------------------------------------------------------------------------------
    async def overview(self, scope: ProjectScope, filters: RunFilters, now: datetime) -> Overview:
        bucket_s = filters.bucket_seconds()
        base = self._match(scope, filters)
        checks = {**base, "kind": "check", **({"name": filters.check} if filters.check is not None else {})}
        project = {
            "name": 1,
            "action": 1,
            "occurred_at": 1,
            "payload.duration_ms": 1,
            "payload.finding_types": 1,
        }
        try:
            docs = await self.collection.find(checks, project).to_list()
            trust_docs = await self.collection.find(
                {**base, "kind": "trust", "action": "block"}, {"payload.reason": 1}
            ).to_list()
            start = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
            week = {"occurred_at": {"$gte": start - timedelta(days=7), "$lt": now}}
            week |= {k: v for k, v in base.items() if k != "occurred_at"}
            today_docs = await self.collection.find(
                {**week, "action": {"$in": ["block", "mask"]}, "kind": {"$in": ["check", "trust"]}},
                {"kind": 1, "action": 1, "occurred_at": 1},
            ).to_list()
        except PyMongoError as exc:
            raise RunStoreUnavailable(f"MongoDB did not answer: {str(exc)[:300]}") from exc
        return overview_from(docs, trust_docs, today_docs, filters, bucket_s, start)
