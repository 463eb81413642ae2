"""Two guardrail-ingest replicas on one NATS: their sink workers share one durable consumer (each batch is
handled by one worker, not by every replica), and every event is stored once."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from stockade.guardrail_ingest.settings import SinkSettings

pytestmark = [pytest.mark.nats, pytest.mark.clickhouse]


async def test_batches_are_split_between_replicas_not_duplicated(
    fresh_nats_url: str,
    clickhouse_dsn: str,
    clickhouse_client: Any,
    unique_name: Callable[[str], str],
    kit: Any,
) -> None:
    table = unique_name("replicas")
    sink = SinkSettings(kind="clickhouse", url=clickhouse_dsn, table=table)
    first, second = (kit.settings(fresh_nats_url, sink, workers=2) for _ in range(2))
    bodies = [kit.batch_body(5, run_id=f"run-{i}") for i in range(8)]
    async with kit.served(first) as base_a, kit.served(second) as base_b, httpx.AsyncClient() as client:
        replies = await asyncio.gather(
            *(
                client.post(f"{(base_a, base_b)[i % 2]}/api/v1/guardrails/clickhouse", json=b)
                for i, b in enumerate(bodies)
            )
        )
        assert [r.status_code for r in replies] == [202] * len(bodies)

        async def statuses() -> list[dict[str, Any]]:
            return [(await client.get(f"{b}/api/v1/status")).json() for b in (base_a, base_b)]

        async def all_handled() -> bool:
            return sum(s["batches"] for s in await statuses()) >= len(bodies)

        await kit.wait_for(all_handled, within_s=30)
        final = await statuses()
    assert sum(s["batches"] for s in final) == len(bodies)  # a fan-out would count 16
    assert sum(s["duplicates"] for s in final) == 0
    rows = clickhouse_client.query(f"SELECT event_id FROM {table}").result_rows
    assert sorted(r[0] for r in rows) == sorted(e["event_id"] for b in bodies for e in b["events"])
