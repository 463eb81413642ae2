"""MongoDB sink: pymongo's AsyncMongoClient (not motor), unique index on ``event_id``, unordered insert_many.

Duplicate-key errors (code 11000) of an unordered bulk insert mean "already stored" and are not failures. A
document the server refuses on its own (another write error) or that cannot be encoded as BSON at all (a NUL in
a key: pymongo refuses the whole insert_many before sending anything) is reported in ``rejected`` and the other
documents are stored. Any other error fails the write, so the batch is redelivered.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import bson
from bson.errors import InvalidDocument
from pymongo.errors import BulkWriteError, PyMongoError

from stockade.guardrail_ingest.sinks.base import SinkError, WriteOutcome, encode_each, reason
from stockade.runtime.mongo import open_collection

DUPLICATE_KEY = 11000
MAX_DOCUMENT_BYTES = 16 * 1024 * 1024  # MongoDB's BSON document limit


class MongoSink:
    kind = "mongodb"

    def __init__(self, url: str, collection: str, *, timeout_s: float = 10.0) -> None:
        self._client, self.collection = open_collection(url, collection, timeout_s=timeout_s)

    async def ensure_schema(self) -> None:
        try:
            await self.collection.create_index("event_id", unique=True, name="event_id_unique")
            await self.collection.create_index([("run_id", 1), ("occurred_at", 1)], name="run_time")
        except PyMongoError as exc:
            raise SinkError(f"mongodb: cannot create indexes: {exc}") from exc

    async def write(self, records: list[dict[str, Any]], *, maybe_stored: bool = False) -> WriteOutcome:
        """The unique index makes every write idempotent; ``maybe_stored`` changes nothing here."""
        if not records:
            return WriteOutcome(0, 0)
        kept, docs, rejected = encode_each("mongodb", records, _document)
        try:
            outcome = await self._insert(kept, docs)
        except InvalidDocument:  # raised for the whole call: find the documents BSON cannot hold
            unencodable = _unencodable(kept, docs)
            rejected.update(unencodable)
            pairs = [(r, d) for r, d in zip(kept, docs, strict=True) if str(r["event_id"]) not in unencodable]
            try:
                outcome = await self._insert([r for r, _ in pairs], [d for _, d in pairs])
            except InvalidDocument as exc:
                raise SinkError(f"mongodb: {exc}") from exc
        return WriteOutcome(outcome.inserted, outcome.duplicates, {**rejected, **outcome.rejected})

    async def _insert(self, records: list[dict[str, Any]], docs: list[dict[str, Any]]) -> WriteOutcome:
        if not docs:
            return WriteOutcome(0, 0)
        try:
            result = await self.collection.insert_many(docs, ordered=False)
            return WriteOutcome(len(result.inserted_ids), 0)
        except BulkWriteError as exc:
            errors = exc.details.get("writeErrors", [])
            refused = {
                str(records[e["index"]]["event_id"]): f"mongodb: {e.get('code')}: {e.get('errmsg')}"[:500]
                for e in errors
                if e.get("code") != DUPLICATE_KEY and isinstance(e.get("index"), int)
            }
            duplicates = sum(1 for e in errors if e.get("code") == DUPLICATE_KEY)
            return WriteOutcome(int(exc.details.get("nInserted", 0)), duplicates, refused)
        except PyMongoError as exc:
            raise SinkError(f"mongodb: {type(exc).__name__}: {exc}") from exc

    async def aclose(self) -> None:
        await self._client.close()


def _document(record: dict[str, Any]) -> dict[str, Any]:
    doc = dict(record)
    doc["occurred_at"] = datetime.fromisoformat(record["occurred_at"])
    doc["received_at"] = datetime.fromisoformat(record["received_at"])
    return doc


def _unencodable(records: list[dict[str, Any]], docs: list[dict[str, Any]]) -> dict[str, str]:
    """event_id -> reason for each document BSON cannot encode, or that is over MongoDB's 16 MiB."""
    found: dict[str, str] = {}
    for record, doc in zip(records, docs, strict=True):
        try:
            size = len(bson.encode(doc))
        except InvalidDocument as exc:
            found[str(record["event_id"])] = reason("mongodb", exc)
            continue
        if size > MAX_DOCUMENT_BYTES:
            found[str(record["event_id"])] = f"mongodb: document of {size} bytes over {MAX_DOCUMENT_BYTES}"
    return found
