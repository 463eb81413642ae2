"""The event store is down when guardrail-ingest starts: POSTs are still accepted (JetStream holds the batches),
the status page shows the store error, and once the store comes up every event is stored exactly once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from stockade.guardrail_ingest.settings import SinkSettings
from stockade.testing.ports import free_port

pytestmark = [pytest.mark.nats, pytest.mark.dynamodb]


async def test_batches_wait_in_jetstream_until_the_store_is_back(
    fresh_nats_url: str, unique_name: Callable[[str], str], kit: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import boto3
    from moto.server import ThreadedMotoServer  # the real DynamoDB HTTP endpoint used by stockade.testing

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    port = free_port()  # nothing listens here yet
    table = unique_name("outage")
    sink = SinkSettings(
        kind="dynamodb", url=f"http://127.0.0.1:{port}", table=table, region="us-east-1", timeout_s=2
    )
    bodies = [kit.batch_body(3, run_id=f"run-{i}") for i in range(3)]
    moto = None
    try:
        settings = kit.settings(fresh_nats_url, sink, workers=1)
        async with kit.served(settings) as base, httpx.AsyncClient(base_url=base) as client:
            for body in bodies:
                reply = await client.post("/api/v1/guardrails/dynamodb", json=body)
                assert reply.status_code == 202, reply.text

            async def failing() -> dict[str, Any] | None:
                status = (await client.get("/api/v1/status")).json()
                return status if status["last_error"] else None

            down = await kit.wait_for(failing, within_s=20)
            assert down and down["schema_ready"] is False and down["inserted"] == 0
            assert down["last_error"] == "a store error: see the guardrail-ingest log"  # no store text (L8)

            moto = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
            moto.start()

            async def stored() -> bool:
                return (await client.get("/api/v1/status")).json()["inserted"] == 9

            assert await kit.wait_for(stored, within_s=40)
        dynamo = boto3.session.Session().client(
            "dynamodb", endpoint_url=f"http://127.0.0.1:{port}", region_name="us-east-1"
        )
        items = dynamo.scan(TableName=table, ProjectionExpression="event_id")["Items"]
        assert sorted(i["event_id"]["S"] for i in items) == sorted(
            e["event_id"] for b in bodies for e in b["events"]
        )
    finally:
        if moto is not None:
            moto.stop()
