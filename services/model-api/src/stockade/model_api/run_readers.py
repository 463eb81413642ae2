"""The reader of each store kind, built once per process from the settings; the pages pick the active one's."""

from __future__ import annotations

from collections.abc import Callable

from nats.aio.client import Client as NatsClient

from stockade.model_api.run_store import RunReader, RunStoreUnavailable
from stockade.model_api.run_store_clickhouse import ClickHouseRunReader
from stockade.model_api.run_store_dynamodb import DynamoRunReader
from stockade.model_api.run_store_mongodb import MongoRunReader
from stockade.model_api.run_store_via_ingest import IngestRunReader
from stockade.model_api.settings import RunStoreSettings

READABLE_KINDS = ("clickhouse", "mongodb", "dynamodb")


class RunReaders:
    """Readers by store kind. Nothing connects until a page asks."""

    def __init__(
        self, settings: RunStoreSettings, nats: Callable[[], NatsClient | None] = lambda: None
    ) -> None:
        self._readers: dict[str, RunReader] = {}
        if settings.clickhouse_through_ingest:  # embedded chdb: only guardrail-ingest's process can open it
            self._readers["clickhouse"] = IngestRunReader(nats, settings.table, timeout_s=settings.timeout_s)
        elif settings.clickhouse_url:
            self._readers["clickhouse"] = ClickHouseRunReader(
                settings.clickhouse_url, settings.table, timeout_s=settings.timeout_s
            )
        if settings.dynamodb_url:
            self._readers["dynamodb"] = DynamoRunReader(
                settings.dynamodb_url,
                settings.table,
                region=settings.dynamodb_region,
                timeout_s=settings.timeout_s,
                max_scan=settings.dynamodb_max_scan,
            )
        if settings.mongodb_url:
            self._readers["mongodb"] = MongoRunReader(
                settings.mongodb_url, settings.table, timeout_s=settings.timeout_s
            )

    def for_kind(self, kind: str) -> RunReader:
        reader = self._readers.get(kind)
        if reader is not None:
            return reader
        if kind not in READABLE_KINDS:
            raise RunStoreUnavailable(
                f"the active database configuration stores runs in {kind}; the console reads runs from "
                f"{', '.join(READABLE_KINDS)} only so far"
            )
        raise RunStoreUnavailable(
            f"the console is not told where {kind} is: set MODEL_API_RUNS__{kind.upper()}_URL "
            "to the store guardrail-ingest writes"
            + (
                " (an embedded chdb store: MODEL_API_RUNS__CLICKHOUSE_THROUGH_INGEST=true)"
                if kind == "clickhouse"
                else ""
            )
        )

    async def aclose(self) -> None:
        for reader in self._readers.values():
            await reader.aclose()
