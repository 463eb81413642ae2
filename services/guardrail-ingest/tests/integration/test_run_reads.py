"""guardrail-ingest answers the console's typed reads of the run store (``guardrail.cmd.read_runs.v2``).

Every reader (ClickHouse: chdb or ``CLICKHOUSE_URL``; MongoDB-wire; DynamoDB) is asked through the typed commands
only, on a store its own sink wrote: two projects, so every answer is checked for the other project's runs. A
query text (the v1 SQL request), an unknown command or field, a missing scope and an unbounded page are refused
before any store is touched. The served service is asked over a real NATS server.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from stockade.contracts import subjects
from stockade.contracts.run_store import (
    RUN_PAGE_PAYLOAD_BYTES,
    ExportEvents,
    ExportPageReply,
    GetOverview,
    GetRun,
    ListRuns,
    OverviewReply,
    RunDetailReply,
    RunPageReply,
    RunQuery,
    RunScope,
)
from stockade.guardrail_ingest.records import to_records
from stockade.guardrail_ingest.run_reads import RunReads
from stockade.guardrail_ingest.settings import SinkSettings
from stockade.guardrail_ingest.sinks.clickhouse import ClickHouseSink
from stockade.guardrail_ingest.sinks.dynamodb import DynamoSink
from stockade.guardrail_ingest.sinks.mongodb import MongoSink
from stockade.guardrail_ingest.sinks.router import FixedStore
from stockade.guardrails.storage.wire import GuardrailBatch

MESSAGE = 1024 * 1024
NOW = datetime.now(UTC).replace(microsecond=0)
MINE = RunScope(projects=frozenset({"proj-a"}))
RUNS_A, RUNS_B, EVENTS_PER_RUN = 7, 3, 6


def _batch(project: str, run: str, start: datetime) -> dict[str, Any]:
    events = []
    for n in range(EVENTS_PER_RUN):
        action = "block" if (run.endswith("-0") and n == 5) else "allow"
        events.append(
            {
                "event_id": f"{project}-{run}-{n}",
                "kind": "check",
                "name": "pii" if n % 2 else "toxicity",
                "occurred_at": (start + timedelta(seconds=n)).isoformat(),
                "session_id": "s",
                "run_id": run,
                "action": action,
                "payload": {"stage": "input", "duration_ms": 10.0 + n, "finding_types": {"EMAIL": 1}},
            }
        )
    return {"run": {"run_id": run, "project_id": project, "agent_id": "agent"}, "events": events}


def _batches() -> list[dict[str, Any]]:
    out = []
    for i in range(RUNS_A):
        out.append(_batch("proj-a", f"run-{i}", NOW - timedelta(hours=1, minutes=i)))
    for i in range(RUNS_B):
        out.append(_batch("proj-b", f"run-b-{i}", NOW - timedelta(hours=1, minutes=i, seconds=30)))
    out.append(_batch("proj-b", "run-0", NOW - timedelta(hours=2)))  # the same run id in another project
    return out


def _query(**extra: Any) -> RunQuery:
    return RunQuery(since=NOW - timedelta(days=1), until=NOW + timedelta(minutes=1), **extra)


@pytest.fixture(
    params=[
        pytest.param("clickhouse", marks=pytest.mark.clickhouse),
        pytest.param("mongodb", marks=pytest.mark.mongo),
        pytest.param("dynamodb", marks=pytest.mark.dynamodb),
    ]
)
async def store(request, unique_name, monkeypatch):
    """A store of each kind holding :func:`_batches`, written by its sink."""
    table = unique_name("guardrail_events")
    if request.param == "clickhouse":
        sink: Any = ClickHouseSink(request.getfixturevalue("clickhouse_dsn"), table)
    elif request.param == "mongodb":
        sink = MongoSink(request.getfixturevalue("mongodb_url"), table)
    else:
        for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
            monkeypatch.setenv(var, "testing")
        sink = DynamoSink(request.getfixturevalue("dynamodb_endpoint"), table, region="us-east-1")
    await sink.ensure_schema()
    for body in _batches():
        await sink.write(to_records(GuardrailBatch.model_validate(body)))
    yield sink
    await sink.aclose()


def reads_of(sink: Any, **kwargs: Any) -> RunReads:
    return RunReads(FixedStore(sink), lambda: sink.kind, **kwargs)


def error_of(reply: bytes) -> str | None:
    body = json.loads(reply)
    return body["error"]["code"] if "error" in body else None


async def test_the_runs_list_pages_through_the_callers_runs_only(store):
    reads = reads_of(store)
    seen: list[tuple[str, str]] = []
    cursor = None
    for _ in range(10):
        body = await reads.reply(
            ListRuns(scope=MINE, query=_query(), cursor=cursor, limit=3).to_bytes(), MESSAGE
        )
        page = RunPageReply.model_validate_json(body)
        assert len(page.runs) <= 3
        seen += [(r.project_id, r.run_id) for r in page.runs]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == [("proj-a", f"run-{i}") for i in range(RUNS_A)]  # newest first, each once
    blocked = await reads.reply(ListRuns(scope=MINE, query=_query(outcome="block")).to_bytes(), MESSAGE)
    assert [r.run_id for r in RunPageReply.model_validate_json(blocked).runs] == ["run-0"]
    foreign = ListRuns(scope=MINE, query=_query(project="proj-b")).to_bytes()
    assert RunPageReply.model_validate_json(await reads.reply(foreign, MESSAGE)).runs == []
    nobody = ListRuns(scope=RunScope(projects=frozenset()), query=_query()).to_bytes()
    assert RunPageReply.model_validate_json(await reads.reply(nobody, MESSAGE)).runs == []


async def test_a_run_of_another_project_is_not_found_and_a_long_run_comes_in_parts(store):
    reads = reads_of(store, reply_bytes=4096 + 900)  # a few events per reply
    assert (
        error_of(await reads.reply(GetRun(scope=MINE, run_id="run-b-0").to_bytes(), MESSAGE)) == "not_found"
    )
    assert error_of(await reads.reply(GetRun(scope=MINE, run_id="nope").to_bytes(), MESSAGE)) == "not_found"
    events, offset, replies = [], 0, 0
    while offset is not None:
        body = await reads.reply(GetRun(scope=MINE, run_id="run-0", offset=offset).to_bytes(), MESSAGE)
        reply = RunDetailReply.model_validate_json(body)
        assert reply.run.project_id == "proj-a"  # never the other project's run-0
        events += reply.run.events
        offset, replies = reply.next_offset, replies + 1
    assert replies > 1
    assert [e.event_id for e in events] == [f"proj-a-run-0-{n}" for n in range(EVENTS_PER_RUN)]
    assert events[5].action == "block" and events[0].stage == "input" and events[1].duration_ms == 11.0


async def test_an_export_of_more_events_than_a_page_returns_all_of_them_scoped(store):
    reads = reads_of(store)
    rows: list[dict[str, Any]] = []
    after, pages = None, 0
    while True:
        body = await reads.reply(
            ExportEvents(scope=MINE, query=_query(), after=after, limit=4).to_bytes(), MESSAGE
        )
        page = ExportPageReply.model_validate_json(body)
        assert len(page.events) <= 4
        rows += page.events
        pages += 1
        if page.next_after is None:
            break
        after = page.next_after
    assert pages > 5
    ids = [r["event_id"] for r in rows]
    assert len(ids) == len(set(ids)) == RUNS_A * EVENTS_PER_RUN
    assert {r["project_id"] for r in rows} == {"proj-a"}
    times = [r["occurred_at"] for r in rows]
    assert times == sorted(times, reverse=True)


async def test_the_overview_counts_the_callers_events_only(store):
    reads = reads_of(store)
    body = await reads.reply(GetOverview(scope=MINE, query=_query(), now=NOW).to_bytes(), MESSAGE)
    overview = OverviewReply.model_validate_json(body).overview
    counts = {name: n for name, n, *_ in overview.latency}
    assert counts == {"pii": RUNS_A * 3, "toxicity": RUNS_A * 3}
    blocks = sum(b for series in overview.decisions.values() for b, _ in series.values())
    assert blocks == 1  # proj-b's run-0 block is not counted
    assert dict(overview.top_findings) == {"EMAIL": RUNS_A * EVENTS_PER_RUN}


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b'{"read_id": "r1", "sql": "SELECT * FROM guardrail_events"}',  # the v1 request: SQL is never run
        b'{"command": "sql", "sql": "SELECT 1"}',
        b'{"command": "list_runs", "query": {"since": "2026-01-01T00:00:00Z", "until": "2026-01-02T00:00:00Z"}}',
        b'{"command": "get_run", "scope": {"projects": ["proj-a"]}, "run_id": "run-0", "sql": "SELECT 1"}',
        b'{"command": "export", "scope": {"projects": ["proj-a"]}, "limit": 1000000,'
        b' "query": {"since": "2026-01-01T00:00:00Z", "until": "2026-01-02T00:00:00Z"}}',
        b'{"command": "get_run", "scope": {"projects": ["proj-a"]}, "run_id": "run\\u0000"}',
    ],
    ids=[
        "not-json",
        "v1-sql",
        "unknown-command",
        "no-scope",
        "extra-field",
        "unbounded-page",
        "control-char",
    ],
)
@pytest.mark.clickhouse
async def test_anything_but_one_typed_command_is_refused_before_the_store(body, clickhouse_dsn, unique_name):
    class Untouchable(FixedStore):
        async def sink_for(self, kind: str) -> Any:
            raise AssertionError("the store was reached")

    reads = RunReads(Untouchable(ClickHouseSink(clickhouse_dsn, unique_name("t"))), lambda: "clickhouse")
    assert error_of(await reads.reply(body, MESSAGE)) == "invalid_request"


@pytest.mark.clickhouse
@pytest.mark.nats
async def test_the_served_service_answers_over_nats_what_its_workers_stored(
    kit, fresh_nats_url, clickhouse_dsn, unique_name
):
    import nats

    table = unique_name("guardrail_events")
    settings = kit.settings(fresh_nats_url, SinkSettings(kind="clickhouse", url=clickhouse_dsn, table=table))
    nc = await nats.connect(fresh_nats_url, connect_timeout=5, max_reconnect_attempts=3)
    try:
        async with kit.served(settings) as base, httpx.AsyncClient(base_url=base) as client:
            posted = await client.post(
                "/api/v1/guardrails/clickhouse", json=kit.batch_body(7, run_id="served")
            )
            assert posted.status_code in (200, 202), posted.text
            ask = GetRun(scope=RunScope(projects=frozenset({"proj-1"})), run_id="served").to_bytes()
            sql = b'{"read_id": "r1", "sql": "SELECT count() FROM ' + table.encode() + b'"}'

            async def stored_count() -> int:
                reply = (await nc.request(subjects.GUARDRAIL_CMD_READ_RUNS, ask, timeout=5)).data
                return 0 if error_of(reply) else len(RunDetailReply.model_validate_json(reply).run.events)

            assert await kit.wait_for(lambda: stored_count()) == 7
            refused = await nc.request(subjects.GUARDRAIL_CMD_READ_RUNS, sql, timeout=5)
            assert error_of(refused.data) == "invalid_request"
            foreign = GetRun(scope=MINE, run_id="served").to_bytes()
            assert error_of(
                (await nc.request(subjects.GUARDRAIL_CMD_READ_RUNS, foreign, timeout=5)).data
            ) == ("not_found")
    finally:
        await nc.close()


# --- the readers' own paths ------------------------------------------------------------------------------------
def _ties_and_a_long_run() -> list[dict[str, Any]]:
    """A run spanning hours (old first event, newest last one), and runs tied on the same last instant."""
    long_run = _batch("proj-a", "run-long", NOW - timedelta(hours=5))
    long_run["events"][-1]["occurred_at"] = (NOW - timedelta(minutes=1)).isoformat()
    ties = []
    for name in ("tie-a", "tie-b", "tie-c"):
        tie = _batch("ties", name, NOW - timedelta(hours=2, minutes=30))
        tie["events"] = tie["events"][:1]
        tie["events"][0]["action"] = "block"
        ties.append(tie)
    return [long_run, *ties]


@pytest.mark.clickhouse
@pytest.mark.parametrize(
    "narrow",
    [{}, {"outcome": "block"}, {"outcome": "allow"}, {"check": "toxicity"}, {"action": "block"}],
)
async def test_the_clickhouse_fast_path_pages_exactly_like_the_grouped_query(
    clickhouse_dsn, unique_name, narrow
):
    from stockade.guardrail_ingest.reads.clickhouse import ClickHouseRunReader

    sink = ClickHouseSink(clickhouse_dsn, unique_name("guardrail_events"))
    await sink.ensure_schema()
    for body in _batches() + _ties_and_a_long_run():
        await sink.write(to_records(GuardrailBatch.model_validate(body)))
    reader = ClickHouseRunReader(sink.read_rows, sink.table)
    scope = RunScope(projects=frozenset({"proj-a", "proj-b", "ties"}))
    query = _query(**narrow)

    def key(runs):
        return [(r.project_id, r.run_id, r.last_at, r.events, r.blocks) for r in runs]

    try:
        everything = reader._summaries(scope, query, None, 10_000, None)
        assert everything, narrow
        for size in (1, 2, 3, 7):
            seen, cursor = [], None
            while True:
                page = reader._newest_runs(scope, query, cursor, size + 1)
                assert key(page) == key(reader._summaries(scope, query, cursor, size + 1, None)), (
                    narrow,
                    size,
                )
                seen += page[:size]
                if len(page) <= size:
                    break
                cursor = page[size - 1].cursor()
            assert key(seen) == key(everything), (narrow, size)
        if not narrow:  # a long run is placed by its last event and counted whole
            runs, _ = await reader.list_runs(scope, query, None, 3)
            assert runs[0].run_id == "run-long" and runs[0].events == EVENTS_PER_RUN
    finally:
        await sink.aclose()


@pytest.mark.dynamodb
async def test_a_dynamodb_range_over_the_scan_cap_is_refused_and_a_project_fits(
    dynamodb_endpoint, unique_name, monkeypatch
):
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(var, "testing")
    sink = DynamoSink(dynamodb_endpoint, unique_name("guardrail_events"), region="us-east-1")
    await sink.ensure_schema()
    for body in _batches():
        await sink.write(to_records(GuardrailBatch.model_validate(body)))
    reads = reads_of(sink, max_scan=30)  # proj-a holds 42 events, proj-b 24
    both = RunScope(projects=frozenset({"proj-a", "proj-b"}))
    refused = json.loads(await reads.reply(ListRuns(scope=both, query=_query()).to_bytes(), MESSAGE))
    assert (
        refused["error"]["code"] == "unavailable" and "narrow the time range" in refused["error"]["message"]
    )
    one = await reads.reply(ListRuns(scope=both, query=_query(project="proj-b")).to_bytes(), MESSAGE)
    assert len(RunPageReply.model_validate_json(one).runs) == RUNS_B + 1
    absent = DynamoSink(dynamodb_endpoint, unique_name("absent"), region="us-east-1")
    missing = RunReads(FixedStore(absent), lambda: "dynamodb")  # FixedStore does not make the table
    body = json.loads(await missing.reply(GetRun(scope=MINE, run_id="run-0").to_bytes(), MESSAGE))
    assert body["error"]["code"] == "unavailable" and "does not exist yet" in body["error"]["message"]
    await sink.aclose()
    await absent.aclose()


@pytest.mark.clickhouse
async def test_a_run_page_cuts_large_payloads_and_the_export_keeps_them(clickhouse_dsn, unique_name):
    """N6: a run of large payloads does not fill the console's memory: a run page holds each event's short
    fields only (at most RUN_PAGE_PAYLOAD_BYTES), the export the whole payload."""
    sink = ClickHouseSink(clickhouse_dsn, unique_name("guardrail_events"))
    await sink.ensure_schema()
    body = _batch("proj-a", "run-big", NOW - timedelta(hours=1))
    body["events"][0]["payload"] = {"stage": "input", "score": 0.5, "reason": "r", "blob": "x" * 100_000}
    await sink.write(to_records(GuardrailBatch.model_validate(body)))
    reads = reads_of(sink)
    try:
        detail = RunDetailReply.model_validate_json(
            await reads.reply(GetRun(scope=MINE, run_id="run-big").to_bytes(), MESSAGE)
        ).run
        big = detail.events[0]
        assert big.payload["truncated_bytes"] > 100_000 and "blob" not in big.payload
        assert (big.stage, big.score, big.payload["reason"]) == ("input", 0.5, "r")
        assert all(len(e.model_dump_json()) < RUN_PAGE_PAYLOAD_BYTES + 1024 for e in detail.events)
        page = ExportPageReply.model_validate_json(
            await reads.reply(ExportEvents(scope=MINE, query=_query()).to_bytes(), MESSAGE)
        )
        exported = next(e for e in page.events if e["event_id"] == "proj-a-run-big-0")
        assert len(exported["payload"]["blob"]) == 100_000
    finally:
        await sink.aclose()
