"""The guardrails library with storage enabled, against a real guardrail-ingest (uvicorn on a free port, real
JetStream, real store): begin_run(), guardrail activity, end_run(); every event lands in the store once."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from stockade.guardrail_ingest.settings import SinkSettings
from stockade.guardrails import Action, GuardrailSystem, LLMRails
from stockade.guardrails.storage import FlushStatus
from stockade.guardrails.testing import FakeClassifier, FakeModelProvider

pytestmark = [pytest.mark.nats, pytest.mark.e2e]

NO_BUILTIN_CHECKS = {name: {"enabled": False} for name in ("pii", "exfiltration", "classification")}


async def _stored(kind: str, request: pytest.FixtureRequest, table: str) -> list[dict[str, Any]]:
    """Every stored event (one entry per row/document/item, so a duplicate would show)."""
    if kind == "clickhouse":
        client = request.getfixturevalue("clickhouse_client")
        # The sink creates its table when its worker starts: until then, nothing is stored yet.
        if not int(await asyncio.to_thread(client.command, f"EXISTS TABLE {table}")):
            return []
        result = await asyncio.to_thread(
            client.query, f"SELECT event_id, run_id, kind, project_id, agent_id, payload FROM {table}"
        )
        return [dict(zip(result.column_names, row, strict=True)) for row in result.result_rows]
    if kind == "dynamodb":
        client = request.getfixturevalue("dynamodb_client")
        try:
            items = (await asyncio.to_thread(client.scan, TableName=table))["Items"]
        except client.exceptions.ResourceNotFoundException:
            return []
        return [{k: v["S"] for k, v in item.items()} for item in items]
    from pymongo import AsyncMongoClient

    async with AsyncMongoClient(request.getfixturevalue("mongodb_url")) as mongo:
        return [d async for d in mongo["stockade"][table].find({}, {"_id": 0})]


def _sink(kind: str, request: pytest.FixtureRequest, table: str) -> SinkSettings:
    if kind == "clickhouse":
        return SinkSettings(kind="clickhouse", url=request.getfixturevalue("clickhouse_dsn"), table=table)
    if kind == "dynamodb":
        mp = request.getfixturevalue("monkeypatch")
        mp.setenv("AWS_ACCESS_KEY_ID", "test")
        mp.setenv("AWS_SECRET_ACCESS_KEY", "test")
        return SinkSettings(
            kind="dynamodb", url=request.getfixturevalue("dynamodb_endpoint"), table=table, region="us-east-1"
        )
    return SinkSettings(kind="mongodb", url=request.getfixturevalue("mongodb_url"), table=table, timeout_s=5)


@pytest.mark.parametrize(
    "kind",
    [
        pytest.param("clickhouse", marks=pytest.mark.clickhouse),
        pytest.param("dynamodb", marks=pytest.mark.dynamodb),
        pytest.param("mongodb", marks=pytest.mark.mongo),
    ],
)
async def test_guardrail_system_run_lands_in_the_store_exactly_once(
    kind: str,
    request: pytest.FixtureRequest,
    fresh_nats_url: str,
    unique_name: Callable[[str], str],
    kit: Any,
) -> None:
    table = unique_name("e2e")
    settings = kit.settings(fresh_nats_url, _sink(kind, request, table), workers=2)
    async with kit.served(settings) as base:
        system = GuardrailSystem(
            {"guardrails": {"checks": NO_BUILTIN_CHECKS}},
            storage={"enabled": True, "backend_url": base},
            policies={"tools": {"deny": ["shell.exec"]}},
        )
        system.add_check(FakeClassifier("fake", {"secret": ("secret", Action.MASK)}))
        system.link_arms("proj-e2e", agent_id="planner")
        run_id = system.begin_run()
        await system.check_input("tell me the secret", session_id="s-1")
        system.before_tool_call("shell.exec", session_id="s-1")
        await system.before_request("s-1")
        buffered = system.storage.buffered()
        assert {e.kind.value for e in buffered} >= {"check", "tool_authorization"}

        result = await system.end_run()
        assert result.status is FlushStatus.SENT and result.sent == len(buffered) and result.db_type == kind
        # The client lost the 202 and sent the same batch again: still stored once.
        assert await _resend(base, kind, run_id, buffered)

        async def all_stored() -> bool:
            return len(await _stored(kind, request, table)) >= len(buffered)

        await kit.wait_for(all_stored, within_s=30)
        async with httpx.AsyncClient(base_url=base) as client:
            status = (await client.get("/api/v1/status")).json()
    rows = await _stored(kind, request, table)
    assert sorted(r["event_id"] for r in rows) == sorted(e.event_id for e in buffered)
    assert {r["run_id"] for r in rows} == {run_id}
    assert {r["project_id"] for r in rows} == {"proj-e2e"} and {r["agent_id"] for r in rows} == {"planner"}
    tool_row = next(r for r in rows if r["kind"] == "tool_authorization")
    payload = (
        tool_row["payload"] if isinstance(tool_row["payload"], dict) else json.loads(tool_row["payload"])
    )
    assert payload  # kind-specific detail survives the trip
    assert status["inserted"] == len(buffered) and status["store_errors"] == 0


async def _resend(base: str, kind: str, run_id: str, events: list[Any]) -> bool:
    body = {
        "run": {"run_id": run_id, "project_id": "proj-e2e", "agent_id": "planner"},
        "events": [e.model_dump(mode="json") for e in events],
    }
    async with httpx.AsyncClient(base_url=base) as client:
        reply = await client.post(f"/api/v1/guardrails/{kind}", json=body)
    assert reply.status_code == 202, reply.text
    return bool(reply.json()["accepted"] == len(events))


@pytest.mark.clickhouse
async def test_llm_rails_wires_storage_from_config(
    request: pytest.FixtureRequest, fresh_nats_url: str, unique_name: Callable[[str], str], kit: Any
) -> None:
    table = unique_name("rails")
    settings = kit.settings(fresh_nats_url, _sink("clickhouse", request, table), workers=1)
    async with kit.served(settings) as base:
        rails = LLMRails(
            {"guardrails": {"checks": NO_BUILTIN_CHECKS, "storage": {"enabled": True, "backend_url": base}}},
            provider=FakeModelProvider(["Hello there"]),
        )
        assert rails.storage is not None and rails.storage.enabled
        run_id = rails.begin_run()
        generated = await rails.agenerate("hi", session_id="s-9")
        assert generated.passed
        result = await rails.end_run()
        assert result.ok and result.sent >= 1

        async def stored() -> list[dict[str, Any]]:
            return await _stored("clickhouse", request, table)

        rows = await kit.wait_for(stored, within_s=30)
    assert "generate" in {r["kind"] for r in rows} and {r["run_id"] for r in rows} == {run_id}
    assert len(rows) == result.sent
