"""Runs read from DynamoDB: the table the DynamoDB sink writes (hash key ``event_id``, a
``run_id-occurred_at`` index, every attribute a string: ``payload`` and ``labels`` JSON text, ``occurred_at``
ISO 8601).

A run page queries the ``run_id-occurred_at`` index. The table has no key by time, so the runs list, the
overview and the export scan the table (``occurred_at`` filtered on the server) and aggregate here; a range
holding more than ``max_scan`` events is refused with a message that says to narrow it (README, "Which store").
"""

from __future__ import annotations

import asyncio
import json
import os
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
from boto3.dynamodb.conditions import Attr, Key
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

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
from stockade.guardrail_ingest.reads.aggregate import export_row, overview_from, run_detail, runs_matching

INDEX = "run_id-occurred_at"
MAX_IN = 100  # DynamoDB's limit of values in one IN; a larger scope is filtered after the scan


def _doc(item: dict[str, Any]) -> dict[str, Any]:
    doc = dict(item)
    for key in ("payload", "labels"):
        try:
            doc[key] = json.loads(item.get(key) or "{}")
        except ValueError:
            doc[key] = {}
    doc["occurred_at"] = datetime.fromisoformat(item["occurred_at"]).astimezone(UTC)
    return doc


class DynamoRunReader:
    kind = "dynamodb"

    def __init__(
        self,
        endpoint: str | None,
        table: str,
        *,
        region: str | None = None,
        timeout_s: float = 10.0,
        max_scan: int = 200_000,
    ) -> None:
        session = boto3.session.Session()  # its own: the default session caches the first credentials
        config = Config(connect_timeout=timeout_s, read_timeout=timeout_s, retries={"max_attempts": 2})
        self._table = session.resource(
            "dynamodb",
            endpoint_url=endpoint or None,
            region_name=region or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1",
            config=config,
        ).Table(table)
        self.max_scan = max_scan

    async def aclose(self) -> None:
        return None

    async def _call(self, fn: Any, *args: Any) -> Any:
        try:
            return await asyncio.to_thread(fn, *args)
        except (BotoCoreError, ClientError) as exc:
            if isinstance(exc, ClientError) and exc.response["Error"]["Code"] == "ResourceNotFoundException":
                raise RunStoreUnavailable(
                    "the DynamoDB table does not exist yet: no run has been stored"
                ) from exc
            raise RunStoreUnavailable(f"DynamoDB did not answer: {str(exc)[:300]}") from exc

    def _scan_sync(
        self, scope: RunScope, since: datetime, until: datetime, query: RunQuery
    ) -> list[dict[str, Any]]:
        scope = scope.narrowed(query.project)
        if scope.empty:
            return []
        condition = Attr("occurred_at").between(since.isoformat(), until.isoformat())
        if not scope.unowned and len(scope.projects) <= MAX_IN:
            condition &= Attr("project_id").is_in(sorted(scope.projects))
        if query.agent is not None:
            condition &= Attr("agent_id").eq(query.agent)
        docs: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {"FilterExpression": condition}
        while True:
            page = self._table.scan(**kwargs)
            for item in page.get("Items", []):
                doc = _doc(item)
                if since <= doc["occurred_at"] < until and scope.allows(doc.get("project_id") or None):
                    docs.append(doc)
            if len(docs) > self.max_scan:
                raise RunStoreUnavailable(
                    f"more than {self.max_scan:,} events in this range: DynamoDB has no key by time, so the "
                    "reads scan; narrow the time range, or pick a project"
                )
            if "LastEvaluatedKey" not in page:
                return docs
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    async def _scan(
        self, scope: RunScope, query: RunQuery, since: datetime | None = None
    ) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = await self._call(
            self._scan_sync, scope, since or query.since, query.until, query
        )
        return result

    async def list_runs(
        self, scope: RunScope, query: RunQuery, cursor: RunCursor | None, limit: int
    ) -> tuple[list[RunSummary], bool]:
        runs = runs_matching(await self._scan(scope, query), query, cursor)[: limit + 1]
        return runs[:limit], len(runs) > limit

    def _query_run(self, run_id: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {"IndexName": INDEX, "KeyConditionExpression": Key("run_id").eq(run_id)}
        while len(items) < MAX_RUN_EVENTS:
            page = self._table.query(**kwargs)
            items += page.get("Items", [])
            if "LastEvaluatedKey" not in page:
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return items[:MAX_RUN_EVENTS]

    async def run(self, scope: RunScope, run_id: str, project_id: str | None) -> RunDetail:
        scope = scope.narrowed(project_id)
        if scope.empty:
            raise RunNotFound(run_id)
        docs = [_doc(i) for i in await self._call(self._query_run, run_id)]
        docs = [d for d in docs if scope.allows(d.get("project_id") or None)]
        if not docs:
            raise RunNotFound(run_id)
        docs.sort(key=lambda d: (d.get("project_id") or "", d["occurred_at"], str(d["event_id"])))
        first = docs[0]
        docs = [d for d in docs if d.get("project_id") == first.get("project_id")]
        return run_detail(run_id, docs)

    async def export(
        self, scope: RunScope, query: RunQuery, after: ExportCursor | None, limit: int
    ) -> tuple[list[dict[str, Any]], bool]:
        """Each page scans the range again (at most ``max_scan`` events) and keeps the page after ``after``."""
        docs = await self._scan(scope, query)
        if query.outcome is not None:
            only = RunQuery(
                since=query.since,
                until=query.until,
                project=query.project,
                agent=query.agent,
                outcome=query.outcome,
            )
            keep = {(r.project_id, r.run_id) for r in runs_matching(docs, only, None)}
            docs = [d for d in docs if (d.get("project_id") or "", d.get("run_id")) in keep]
        if query.check is not None:
            docs = [d for d in docs if d.get("name") == query.check]
        if query.action is not None:
            docs = [d for d in docs if d.get("action") == query.action]
        if after is not None:
            docs = [
                d
                for d in docs
                if (d["occurred_at"], str(d["event_id"])) < (after.occurred_at, after.event_id)
            ]
        docs.sort(key=lambda d: (d["occurred_at"], str(d["event_id"])), reverse=True)
        return [export_row(d) for d in docs[:limit]], len(docs) > limit

    async def overview(self, scope: RunScope, query: RunQuery, now: datetime) -> Overview:
        bucket_s = query.bucket_seconds()
        start = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        docs = await self._scan(scope, query)
        week = RunQuery(since=start - timedelta(days=7), until=now, project=query.project, agent=query.agent)
        week_docs = await self._scan(scope, week)
        checks = [
            d
            for d in docs
            if d.get("kind") == "check" and (query.check is None or d.get("name") == query.check)
        ]
        trust = [d for d in docs if d.get("kind") == "trust" and d.get("action") == "block"]
        return overview_from(checks, trust, week_docs, query, bucket_s, start)
