"""Every stored guardrail event carries the platform policy (name and version) that made it (issue 31).

Each store (ClickHouse: chdb or ``CLICKHOUSE_URL``; MongoDB-wire; DynamoDB) is written by its own sink and read
back through the typed run-store commands, as the console reads it: a run whose policy changed half-way shows
each event's own version, and the export carries them. Events stored before the fields existed (and events of a
local configuration) still read, with no policy. A ClickHouse table made by an earlier release gains the columns
when the sink starts, keeping its rows.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from stockade.contracts.policy import PolicyRef
from stockade.contracts.run_store import (
    ExportEvents,
    ExportPageReply,
    GetRun,
    RunDetailReply,
    RunQuery,
    RunScope,
)
from stockade.guardrail_ingest.records import RECORD_FIELDS, to_records
from stockade.guardrail_ingest.run_reads import RunReads
from stockade.guardrail_ingest.settings import SinkSettings
from stockade.guardrail_ingest.sinks.clickhouse import ClickHouseSink
from stockade.guardrail_ingest.sinks.dynamodb import DynamoSink
from stockade.guardrail_ingest.sinks.mongodb import MongoSink
from stockade.guardrail_ingest.sinks.router import FixedStore
from stockade.guardrails import Action, GuardrailSystem
from stockade.guardrails.storage import FlushStatus
from stockade.guardrails.storage.wire import GuardrailBatch
from stockade.guardrails.testing import FakeClassifier

MESSAGE = 1024 * 1024
NOW = datetime.now(UTC).replace(microsecond=0)
MINE = RunScope(projects=frozenset({"proj-a"}))
POLICY_FIELDS = ("policy_name", "policy_version")


def _event(n: int, **policy: str) -> dict[str, Any]:
    return {
        "event_id": f"ev-{n}",
        "kind": "check",
        "name": "pii",
        "occurred_at": (NOW - timedelta(minutes=30) + timedelta(seconds=n)).isoformat(),
        "run_id": "run-p",
        "action": "block" if n == 3 else "allow",
        "payload": {"stage": "input", "duration_ms": 1.0},
        **policy,
    }


def _batch() -> dict[str, Any]:
    """A run whose policy was published again half-way: events 1-2 by v3, event 3 by v4."""
    return {
        "run": {"run_id": "run-p", "project_id": "proj-a", "agent_id": "agent"},
        "events": [
            _event(1, policy_name="support-bot", policy_version="3"),
            _event(2, policy_name="support-bot", policy_version="3"),
            _event(3, policy_name="support-bot", policy_version="4"),
        ],
    }


def _old_record() -> dict[str, Any]:
    """An event as an earlier release stored it: no policy fields at all."""
    record = to_records(GuardrailBatch.model_validate({**_batch(), "events": [_event(0)]}))[0]
    return {k: v for k, v in record.items() if k not in POLICY_FIELDS}


_OLD_CLICKHOUSE_TABLE = """CREATE TABLE {table} (
    event_id String, run_id String, kind LowCardinality(String), name LowCardinality(String),
    occurred_at DateTime64(6, 'UTC'), session_id Nullable(String), action LowCardinality(Nullable(String)),
    payload String, project_id String, agent_id Nullable(String), environment LowCardinality(Nullable(String)),
    prompt_name Nullable(String), prompt_version Nullable(String), correlation_id Nullable(String),
    labels String, received_at DateTime64(6, 'UTC')
) ENGINE = ReplacingMergeTree PARTITION BY toYYYYMM(occurred_at) ORDER BY (project_id, run_id, event_id)"""
"""The run table as the first release made it (before ``ingest_key_id`` and the policy columns)."""


@pytest.fixture(
    params=[
        pytest.param("clickhouse", marks=pytest.mark.clickhouse),
        pytest.param("mongodb", marks=pytest.mark.mongo),
        pytest.param("dynamodb", marks=pytest.mark.dynamodb),
    ]
)
async def store(request, unique_name, monkeypatch):
    """A store of each kind holding one event of an earlier release, then :func:`_batch`, by its sink."""
    table = unique_name("guardrail_events")
    old = _old_record()
    if request.param == "clickhouse":
        client = request.getfixturevalue("clickhouse_client")
        client.command(_OLD_CLICKHOUSE_TABLE.format(table=table))
        columns = [f for f in RECORD_FIELDS if f in old and f != "ingest_key_id"]
        row = [json.dumps(old[c]) if c in ("payload", "labels") else old[c] for c in columns]
        for i, c in enumerate(columns):
            if c.endswith("_at"):
                row[i] = datetime.fromisoformat(row[i])
        client.insert(table, [row], column_names=columns)
        sink: Any = ClickHouseSink(request.getfixturevalue("clickhouse_dsn"), table)
        await sink.ensure_schema()  # an existing table of an earlier release: the columns are added
    else:
        if request.param == "mongodb":
            sink = MongoSink(request.getfixturevalue("mongodb_url"), table)
        else:
            for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
                monkeypatch.setenv(var, "testing")
            sink = DynamoSink(request.getfixturevalue("dynamodb_endpoint"), table, region="us-east-1")
        await sink.ensure_schema()
        await sink.write([old])
    await sink.write(to_records(GuardrailBatch.model_validate(_batch())))
    yield sink
    await sink.aclose()


def _reads(sink: Any) -> RunReads:
    return RunReads(FixedStore(sink), lambda: sink.kind)


async def test_a_run_page_shows_the_policy_version_of_each_decision(store):
    body = await _reads(store).reply(GetRun(scope=MINE, run_id="run-p").to_bytes(), MESSAGE)
    run = RunDetailReply.model_validate_json(body).run
    shown = [(e.event_id, e.action, e.policy) for e in run.events]
    assert shown == [
        ("ev-0", "allow", None),  # stored before events carried a policy
        ("ev-1", "allow", "support-bot v3"),
        ("ev-2", "allow", "support-bot v3"),
        ("ev-3", "block", "support-bot v4"),  # the block came after the stricter version was published
    ]


async def test_the_export_carries_each_events_policy(store):
    query = RunQuery(since=NOW - timedelta(days=1), until=NOW + timedelta(minutes=1))
    body = await _reads(store).reply(ExportEvents(scope=MINE, query=query).to_bytes(), MESSAGE)
    rows = {r["event_id"]: r for r in ExportPageReply.model_validate_json(body).events}
    assert [(rows[f"ev-{n}"]["policy_name"], rows[f"ev-{n}"]["policy_version"]) for n in range(4)] == [
        (None, None),
        ("support-bot", "3"),
        ("support-bot", "3"),
        ("support-bot", "4"),
    ]


@pytest.mark.mongo
@pytest.mark.nats
async def test_the_library_stamps_each_event_with_the_policy_version_it_ran(
    request, fresh_nats_url, unique_name, kit
):
    """A system built from platform policy v3 is moved to v4 in the middle of a run (as ``from_platform`` does on
    a publish): through a real guardrail-ingest, the run page shows which version made each decision."""
    table = unique_name("guardrail_events")
    url = request.getfixturevalue("mongodb_url")
    sink_settings = SinkSettings(kind="mongodb", url=url, table=table, timeout_s=5)
    async with kit.served(kit.settings(fresh_nats_url, sink_settings)) as base:
        system = GuardrailSystem(
            {
                "guardrails": {
                    "checks": {n: {"enabled": False} for n in ("pii", "exfiltration", "classification")}
                }
            },
            storage={"enabled": True, "backend_url": base},
        )
        system.add_check(FakeClassifier("fake", {"refund": ("refund", Action.BLOCK)}))
        system.link_arms("proj-a", agent_id="support")
        system.policy_ref = PolicyRef(name="support-bot", version=3)
        system.begin_run("run-lib")
        assert (await system.check_input("refund please")).blocked
        system.policy_ref = PolicyRef(name="support-bot", version=4)
        await system.check_input("hello")
        assert (await system.end_run()).status is FlushStatus.SENT
        sink = MongoSink(url, table)
        reads = _reads(sink)

        async def stored() -> list[Any]:
            body = await reads.reply(GetRun(scope=MINE, run_id="run-lib").to_bytes(), MESSAGE)
            return [] if "error" in json.loads(body) else RunDetailReply.model_validate_json(body).run.events

        events = await kit.wait_for(stored, within_s=30)
        await sink.aclose()
    # As a set: MongoDB keeps times to the millisecond, and two checks in the same millisecond read back in
    # event-id order (the run page orders by time, then id).
    assert sorted((e.action, e.policy) for e in events) == [
        ("allow", "support-bot v4"),
        ("block", "support-bot v3"),
    ]


def test_a_policy_name_with_a_control_character_is_refused_at_the_door():
    body = _batch()
    body["events"][0]["policy_name"] = "support\x1b[2J"
    with pytest.raises(ValueError, match="policy_name"):
        GuardrailBatch.model_validate(body)
