"""guardrail-ingest answers the console's read queries (``guardrail.cmd.read_runs.v1``) on its embedded store.

Against real servers: guardrail-ingest served on a real socket with its chdb store (``CLICKHOUSE_URL`` unset) and
a real NATS server; the events are posted over HTTP and stored by its own workers, the queries asked over NATS.
The responder alone (:class:`RunReads`) is tested against the plugin's ClickHouse (chdb or ``CLICKHOUSE_URL``).
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime

import httpx
import pytest

from stockade.contracts import RunStoreRead, RunStoreRows, subjects
from stockade.contracts.run_reads import decode_row, encode_value
from stockade.guardrail_ingest.records import to_records
from stockade.guardrail_ingest.run_reads import RunReads
from stockade.guardrail_ingest.settings import SinkSettings
from stockade.guardrail_ingest.sinks.clickhouse import ClickHouseSink
from stockade.guardrails.storage.wire import GuardrailBatch

pytestmark = [pytest.mark.clickhouse]


def ask(sql: str, read_id: str | None = None, **parameters: object) -> bytes:
    return (
        RunStoreRead(read_id=read_id or uuid.uuid4().hex, sql=sql, parameters=encode_value(parameters))
        .model_dump_json()
        .encode()
    )


def error_of(reply: bytes) -> str | None:
    body = json.loads(reply)
    return body["error"]["code"] if "error" in body else None


@pytest.fixture
async def stored(clickhouse_dsn, unique_name, kit):
    """A table holding 40 events of two runs, written by the sink; the responder on that sink."""
    table = unique_name("guardrail_events")
    sink = ClickHouseSink(clickhouse_dsn, table)
    await sink.ensure_schema()
    for run in ("run-a", "run-b"):
        body = kit.batch_body(20, run_id=run)
        await sink.write(to_records(GuardrailBatch.model_validate(body)))

    async def ready() -> ClickHouseSink:
        return sink

    yield sink, RunReads(ready)
    await sink.aclose()


async def test_a_select_is_answered_with_typed_rows(stored):
    sink, reads = stored
    sql = (
        f"SELECT project_id, run_id, max(occurred_at), count(), groupUniqArray(kind) FROM {sink.table} "  # noqa: S608
        "WHERE (project_id, run_id) IN %(only)s GROUP BY project_id, run_id ORDER BY run_id"
    )
    reply = RunStoreRows.model_validate_json(
        await reads.answer(ask(sql, only=[("proj-1", "run-a"), ("proj-1", "run-b")]), 1024 * 1024)
    )
    assert reply.parts == 1 and reply.part == 0
    rows = [decode_row(r) for r in reply.rows]
    assert [(r[0], r[1], r[3], r[4]) for r in rows] == [
        ("proj-1", "run-a", 20, ["check"]),
        ("proj-1", "run-b", 20, ["check"]),
    ]
    assert isinstance(rows[0][2], datetime)


async def test_a_large_result_comes_in_parts_in_order_then_the_parts_are_dropped(stored):
    sink, reads = stored
    sql = f"SELECT event_id, payload FROM {sink.table} ORDER BY event_id"  # noqa: S608
    expected = [tuple(r) for r in sink._connected().query(sql).result_rows]
    first = RunStoreRows.model_validate_json(await reads.answer(ask(sql, read_id="r1"), 2048))
    assert first.parts > 3
    rows = [decode_row(r) for r in first.rows]
    for part in range(1, first.parts):
        body = await reads.answer(RunStoreRead(read_id="r1", part=part).model_dump_json().encode(), 2048)
        reply = RunStoreRows.model_validate_json(body)
        assert len(body) <= 2048 and (reply.part, reply.parts) == (part, first.parts)
        rows += [decode_row(r) for r in reply.rows]
    assert rows == expected
    again = RunStoreRead(read_id="r1", part=1).model_dump_json().encode()
    assert error_of(await reads.answer(again, 2048)) == "expired"  # the last part was fetched: all dropped


async def test_parts_nobody_fetches_expire(stored):
    sink, _ = stored
    now = [0.0]

    async def ready() -> ClickHouseSink:
        return sink

    reads = RunReads(ready, clock=lambda: now[0])
    first = RunStoreRows.model_validate_json(
        await reads.answer(ask(f"SELECT event_id FROM {sink.table}", read_id="late"), 1500)  # noqa: S608
    )
    assert first.parts > 1
    now[0] += 31
    later = RunStoreRead(read_id="late", part=1).model_dump_json().encode()
    assert error_of(await reads.answer(later, 1500)) == "expired"


@pytest.mark.parametrize(
    ("sql", "code"),
    [
        ("INSERT INTO {t} (event_id, run_id) VALUES ('x', 'y')", "refused"),
        ("SELECT 1 INTO OUTFILE '/tmp/stockade-outfile.csv'", "refused"),
        ("select * from {t} into /* hidden */ outfile 'x.csv'", "refused"),
        ("SELECT * FROM file('/etc/passwd', 'LineAsString')", "query_failed"),  # readonly: no table functions
        ("SELECT 1; DROP TABLE {t}", "refused"),  # one statement only
        ("SELECT * FROM {t} WHERE nonsense(", "query_failed"),
        ("SELECT count() FROM no_such_table_here", "unknown_table"),
    ],
)
async def test_only_read_queries_run_and_the_store_stays_writable(stored, sql, code):
    sink, reads = stored
    assert error_of(await reads.answer(ask(sql.format(t=sink.table)), 1024 * 1024)) == code
    count = f"SELECT count() FROM {sink.table}"  # noqa: S608
    assert json.loads(await reads.answer(ask(count), 1024 * 1024))["rows"] == [[40]]
    await sink.write(
        to_records(
            GuardrailBatch.model_validate(
                {"run": {"run_id": "run-c", "project_id": "p"}, "events": [_event()]}
            )
        )
    )
    assert json.loads(await reads.answer(ask(count), 1024 * 1024))["rows"] == [[41]]


def _event() -> dict:
    return {
        "event_id": str(uuid.uuid4()),
        "kind": "check",
        "name": "pii",
        "occurred_at": "2026-11-24T10:00:00+00:00",
        "run_id": "run-c",
        "action": "allow",
        "payload": {},
    }


async def test_a_malformed_request_is_an_error_reply(stored):
    _, reads = stored
    assert error_of(await reads.answer(b"not json", 4096)) == "invalid_request"
    assert error_of(await reads.answer(b'{"read_id": "../x", "sql": "SELECT 1"}', 4096)) == "invalid_request"


@pytest.mark.nats
async def test_the_served_service_answers_over_nats_what_its_workers_stored(
    kit, fresh_nats_url, clickhouse_dsn, unique_name
):
    import nats

    if not clickhouse_dsn.startswith("chdb:"):
        pytest.skip(
            "guardrail-ingest answers reads only for an embedded (chdb) store; CLICKHOUSE_URL is a server"
        )
    table = unique_name("guardrail_events")
    settings = kit.settings(fresh_nats_url, SinkSettings(kind="clickhouse", url=clickhouse_dsn, table=table))
    nc = await nats.connect(fresh_nats_url, connect_timeout=5, max_reconnect_attempts=3)
    try:
        async with kit.served(settings) as base, httpx.AsyncClient(base_url=base) as client:
            posted = await client.post(
                "/api/v1/guardrails/clickhouse", json=kit.batch_body(7, run_id="served")
            )
            assert posted.status_code in (200, 202), posted.text
            count = ask(f"SELECT count() FROM {table} WHERE run_id = %(run)s", run="served")  # noqa: S608

            async def stored_count() -> int:
                reply = json.loads(
                    (await nc.request(subjects.GUARDRAIL_CMD_READ_RUNS, count, timeout=5)).data
                )
                return 0 if "error" in reply else reply["rows"][0][0]

            assert await kit.wait_for(lambda: stored_count()) == 7
    finally:
        await nc.close()
