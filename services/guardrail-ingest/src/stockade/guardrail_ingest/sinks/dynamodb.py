"""DynamoDB sink. ``event_id`` is the table's hash key, so an event can never be stored as two items; the write
mode decides what a second write of the same event does:

- ``batch`` (default): on a redelivered batch, ids already stored are looked up with ``BatchGetItem`` and
  skipped; a first delivery is written without looking (a resend after JetStream's duplicate window overwrites
  its item with the same attributes but a later ``received_at``). Writes go in ``BatchWriteItem`` requests of 25 (deduplicated within the write; unprocessed items retried with backoff).
  Two workers racing on one redelivered batch may both write an event: the item is overwritten with the same
  attributes. About 3 times faster than ``conditional`` against the moto server here.
- ``conditional``: one ``PutItem`` per event with ``ConditionExpression="attribute_not_exists(event_id)"``; the
  first write wins and a failed condition counts as a duplicate.

An item DynamoDB refuses on its own (``ValidationException``: over 400 KB, an invalid value) is reported in
``WriteOutcome.rejected``; in ``batch`` mode the request it spoiled is put again item by item, so the others are
stored.

boto3 is synchronous: calls run in worker threads (boto3 clients are thread-safe). The table (``event_id`` hash
key, a ``run_id``/``occurred_at`` index for per-run queries, on-demand billing) is created when missing.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from stockade.guardrail_ingest.sinks.base import SinkError, WriteOutcome, reason

_PARALLEL_PUTS = 8
_INVALID = "ValidationException"  # an item DynamoDB can never take: over 400 KB, an invalid attribute value
_GET_CHUNK, _WRITE_CHUNK, _UNPROCESSED_RETRIES = 100, 25, 8


class DynamoSink:
    kind = "dynamodb"

    def __init__(
        self,
        url: str | None,
        table: str,
        *,
        region: str | None = None,
        timeout_s: float = 10.0,
        conditional: bool = False,
    ) -> None:
        self.table = table
        self.conditional = conditional
        self.url, self.region, self.timeout_s = url, region, timeout_s  # the run store's reader opens its own
        # A session of our own: boto3's module-level default session caches the first credentials it resolves
        # for the whole process, which would leak into (or from) every other boto3 user in it.
        self._client = boto3.session.Session().client(
            "dynamodb",
            endpoint_url=url or None,
            region_name=region or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1",
            config=Config(
                connect_timeout=timeout_s,
                read_timeout=timeout_s,
                retries={"max_attempts": 3, "mode": "standard"},
            ),
        )
        self._pool = ThreadPoolExecutor(max_workers=_PARALLEL_PUTS, thread_name_prefix="dynamodb-sink")

    async def ensure_schema(self) -> None:
        await asyncio.to_thread(self._ensure_table)

    def _ensure_table(self) -> None:
        try:
            self._client.describe_table(TableName=self.table)
            return
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ResourceNotFoundException":
                raise SinkError(f"dynamodb: {exc}") from exc
        except BotoCoreError as exc:
            raise SinkError(f"dynamodb: {exc}") from exc
        try:
            self._client.create_table(
                TableName=self.table,
                BillingMode="PAY_PER_REQUEST",
                AttributeDefinitions=[
                    {"AttributeName": "event_id", "AttributeType": "S"},
                    {"AttributeName": "run_id", "AttributeType": "S"},
                    {"AttributeName": "occurred_at", "AttributeType": "S"},
                ],
                KeySchema=[{"AttributeName": "event_id", "KeyType": "HASH"}],
                GlobalSecondaryIndexes=[
                    {
                        "IndexName": "run_id-occurred_at",
                        "KeySchema": [
                            {"AttributeName": "run_id", "KeyType": "HASH"},
                            {"AttributeName": "occurred_at", "KeyType": "RANGE"},
                        ],
                        "Projection": {"ProjectionType": "ALL"},
                    }
                ],
            )
            self._client.get_waiter("table_exists").wait(TableName=self.table)
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ResourceInUseException":  # another replica created it
                raise SinkError(f"dynamodb: cannot create table {self.table}: {exc}") from exc
        except BotoCoreError as exc:
            raise SinkError(f"dynamodb: {exc}") from exc

    async def write(self, records: list[dict[str, Any]], *, maybe_stored: bool = False) -> WriteOutcome:
        """``batch`` mode looks stored ids up only when ``maybe_stored`` (a redelivered batch); on a first delivery
        it writes straight away (an item keyed by ``event_id`` cannot become two)."""
        if not records:
            return WriteOutcome(0, 0)
        if not self.conditional:
            try:
                return await asyncio.to_thread(self._write_batch, records, maybe_stored)
            except (ClientError, BotoCoreError) as exc:
                raise SinkError(f"dynamodb: {exc}") from exc
        loop = asyncio.get_running_loop()
        results = await asyncio.gather(
            *(loop.run_in_executor(self._pool, self._put, r) for r in records), return_exceptions=True
        )
        rejected: dict[str, str] = {}
        failures: list[BaseException] = []
        for record, result in zip(records, results, strict=True):
            if isinstance(result, ClientError) and _code(result) == _INVALID:
                rejected[str(record["event_id"])] = reason("dynamodb", result)
            elif isinstance(result, BaseException):
                failures.append(result)
        if failures:
            raise SinkError(f"dynamodb: {len(failures)} puts failed, first: {failures[0]}") from failures[0]
        inserted = sum(1 for r in results if r is True)
        return WriteOutcome(inserted, len(records) - inserted - len(rejected), rejected)

    def _write_batch(self, records: list[dict[str, Any]], lookup: bool = True) -> WriteOutcome:
        first: dict[str, dict[str, Any]] = {}
        for record in records:
            first.setdefault(str(record["event_id"]), record)
        unique = list(first.values())
        existing: set[str] = set()
        ids = [str(r["event_id"]) for r in unique] if lookup else []
        for start in range(0, len(ids), _GET_CHUNK):
            keys = [{"event_id": {"S": i}} for i in ids[start : start + _GET_CHUNK]]
            request: dict[str, Any] = {self.table: {"Keys": keys, "ProjectionExpression": "event_id"}}
            for attempt in range(_UNPROCESSED_RETRIES):
                reply = self._client.batch_get_item(RequestItems=request)
                existing.update(i["event_id"]["S"] for i in reply["Responses"].get(self.table, []))
                request = reply.get("UnprocessedKeys") or {}
                if not request:
                    break
                time.sleep(min(0.05 * 2**attempt, 1.0))
            else:
                raise SinkError("dynamodb: BatchGetItem kept returning unprocessed keys")
        fresh = [r for r in unique if str(r["event_id"]) not in existing]
        chunks = [fresh[start : start + _WRITE_CHUNK] for start in range(0, len(fresh), _WRITE_CHUNK)]
        rejected: dict[str, str] = {}
        # DynamoDB takes BatchWriteItem requests in parallel: up to _PARALLEL_PUTS at once (boto3 clients are
        # thread-safe). The first error of any request fails the write, which is retried whole (idempotent).
        for refused in self._pool.map(self._write_chunk, chunks):
            rejected.update(refused)
        return WriteOutcome(len(fresh) - len(rejected), len(records) - len(fresh), rejected)

    def _write_chunk(self, chunk: list[dict[str, Any]]) -> dict[str, str]:
        """One BatchWriteItem; when one item spoils it, the items one by one. Returns the refused ones."""
        rejected: dict[str, str] = {}
        try:
            self._batch_write(chunk)
        except ClientError as exc:
            if _code(exc) != _INVALID:
                raise
            # One item spoils the whole request (over 400 KB, an invalid value): put them one by one.
            for record in chunk:
                try:
                    self._client.put_item(TableName=self.table, Item=_item(record))
                except ClientError as item_exc:
                    if _code(item_exc) != _INVALID:
                        raise
                    rejected[str(record["event_id"])] = reason("dynamodb", item_exc)
        return rejected

    def _batch_write(self, records: list[dict[str, Any]]) -> None:
        puts: dict[str, Any] = {self.table: [{"PutRequest": {"Item": _item(r)}} for r in records]}
        for attempt in range(_UNPROCESSED_RETRIES):
            puts = self._client.batch_write_item(RequestItems=puts).get("UnprocessedItems") or {}
            if not puts:
                return
            time.sleep(min(0.05 * 2**attempt, 1.0))
        raise SinkError("dynamodb: BatchWriteItem kept returning unprocessed items")

    def _put(self, record: dict[str, Any]) -> bool:
        try:
            self._client.put_item(
                TableName=self.table,
                Item=_item(record),
                ConditionExpression="attribute_not_exists(event_id)",
            )
            return True
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return False
            raise

    async def aclose(self) -> None:
        self._pool.shutdown(wait=True)
        self._client.close()


def _item(record: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Strings only: payload and labels as JSON text (no float-to-Decimal surprises); None is left out."""
    item: dict[str, dict[str, str]] = {}
    for key, value in record.items():
        if value is None:
            continue
        text = json.dumps(value, sort_keys=True, default=str) if isinstance(value, dict) else str(value)
        item[key] = {"S": text}
    return item


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))
