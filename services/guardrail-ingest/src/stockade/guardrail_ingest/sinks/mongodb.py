"""MongoDB sink: pymongo's AsyncMongoClient (not motor), unique index on ``event_id``, unordered insert_many.

Duplicate-key errors (code 11000) of an unordered bulk insert mean "already stored" and are not failures; any
other write error fails the batch so it is redelivered.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pymongo import AsyncMongoClient
from pymongo.errors import BulkWriteError, PyMongoError
from pymongo.uri_parser import parse_uri

from stockade.guardrail_ingest.sinks.base import SinkError, WriteOutcome

DUPLICATE_KEY = 11000


class MongoSink:
    kind = "mongodb"

    def __init__(self, url: str, collection: str, *, timeout_s: float = 10.0) -> None:
        database = parse_uri(url).get("database") or "stockade"
        ms = int(timeout_s * 1000)
        self._client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
            url, serverSelectionTimeoutMS=ms, connectTimeoutMS=ms, timeoutMS=ms, tz_aware=True
        )
        self.collection = self._client[database][collection]

    async def ensure_schema(self) -> None:
        try:
            await self.collection.create_index("event_id", unique=True, name="event_id_unique")
            await self.collection.create_index([("run_id", 1), ("occurred_at", 1)], name="run_time")
        except PyMongoError as exc:
            raise SinkError(f"mongodb: cannot create indexes: {exc}") from exc

    async def write(self, records: list[dict[str, Any]]) -> WriteOutcome:
        if not records:
            return WriteOutcome(0, 0)
        docs = [_document(r) for r in records]
        try:
            result = await self.collection.insert_many(docs, ordered=False)
            return WriteOutcome(len(result.inserted_ids), 0)
        except BulkWriteError as exc:
            errors = exc.details.get("writeErrors", [])
            others = [e for e in errors if e.get("code") != DUPLICATE_KEY]
            if others:
                raise SinkError(
                    f"mongodb: {len(others)} write errors, first: {others[0].get('errmsg')}"
                ) from exc
            return WriteOutcome(int(exc.details.get("nInserted", 0)), len(errors))
        except PyMongoError as exc:
            raise SinkError(f"mongodb: {type(exc).__name__}: {exc}") from exc

    async def aclose(self) -> None:
        await self._client.close()


def _document(record: dict[str, Any]) -> dict[str, Any]:
    doc = dict(record)
    doc["occurred_at"] = datetime.fromisoformat(record["occurred_at"])
    doc["received_at"] = datetime.fromisoformat(record["received_at"])
    return doc
