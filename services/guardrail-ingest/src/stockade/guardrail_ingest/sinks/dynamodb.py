"""DynamoDB sink: one conditional put per event, ``attribute_not_exists(event_id)`` (first write wins).

boto3 is synchronous: the puts run in worker threads (a bounded pool; boto3 clients are thread-safe). A failed
condition means "already stored". The table (``event_id`` hash key, a ``run_id``/``occurred_at`` index for
per-run queries, on-demand billing) is created at startup when missing.
"""

from __future__ import annotations

import asyncio
import json
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from stockade.guardrail_ingest.sinks.base import SinkError, WriteOutcome

_PARALLEL_PUTS = 8


class DynamoSink:
    kind = "dynamodb"

    def __init__(
        self, url: str | None, table: str, *, region: str | None = None, timeout_s: float = 10.0
    ) -> None:
        self.table = table
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

    async def write(self, records: list[dict[str, Any]]) -> WriteOutcome:
        if not records:
            return WriteOutcome(0, 0)
        loop = asyncio.get_running_loop()
        results = await asyncio.gather(
            *(loop.run_in_executor(self._pool, self._put, r) for r in records), return_exceptions=True
        )
        failures = [r for r in results if isinstance(r, BaseException)]
        if failures:
            raise SinkError(f"dynamodb: {len(failures)} puts failed, first: {failures[0]}") from failures[0]
        inserted = sum(1 for r in results if r is True)
        return WriteOutcome(inserted, len(records) - inserted)

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
