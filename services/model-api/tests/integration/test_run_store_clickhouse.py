"""The ClickHouse run reader's fast path (newest events first, then only those runs) pages exactly like one
grouped query over every run, whatever the filters and page sizes, on events stored by ingest's sink."""

from datetime import timedelta

import pytest

from stockade.model_api.run_filters import parse_filters
from stockade.model_api.run_store import ProjectScope
from stockade.model_api.run_store_clickhouse import ClickHouseRunReader

from .conftest import NOW, SAMPLE_PROJECTS, _check, sample_batches, store_batches

pytestmark = pytest.mark.clickhouse
SCOPE = ProjectScope(frozenset({*SAMPLE_PROJECTS, "ties"}))


def extra_batches():
    """A run spanning hours (old first event, newest last one), and runs tied on the same last instant."""
    t = NOW - timedelta(minutes=1)
    long_run = [
        _check("run-long", 1, NOW - timedelta(hours=5), "toxicity", "block", 30.0, 0.9, "input"),
        _check("run-long", 2, t, "pii", "allow", 8.0, 0.0, "output"),
    ]
    batches = [
        {"run": {"run_id": "run-long", "project_id": "shop", "agent_id": "support-bot"}, "events": long_run}
    ]
    for name in ("tie-a", "tie-b", "tie-c"):
        at = NOW - timedelta(hours=2, minutes=30)
        batches.append(
            {
                "run": {"run_id": name, "project_id": "ties", "agent_id": "batcher"},
                "events": [_check(name, 1, at, "pii", "block", 5.0, 0.8, "input", PERSON=1)],
            }
        )
    return batches


@pytest.fixture
async def reader(clickhouse_dsn, unique_name):
    table = unique_name("guardrail_events")
    await store_batches(clickhouse_dsn, table, sample_batches() + extra_batches())
    reader = ClickHouseRunReader(clickhouse_dsn, table)
    yield reader
    await reader.aclose()


def key(runs):
    return [(r.project_id, r.run_id, r.last_at, r.events, r.blocks, r.masks) for r in runs]


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"outcome": "block"},
        {"outcome": "mask"},
        {"check": "toxicity"},
        {"action": "block"},
        {"agent": "batcher"},
    ],
)
async def test_fast_path_pages_exactly_like_the_grouped_query(reader, params):
    filters = parse_filters(params)
    everything = reader._summaries(SCOPE, filters, None, 10_000, None)
    assert everything, params
    for size in (1, 2, 3, 7):
        seen, cursor = [], None
        while True:
            page = reader._newest_runs(SCOPE, filters, cursor, size + 1)
            assert key(page) == key(reader._summaries(SCOPE, filters, cursor, size + 1, None)), (
                params,
                size,
                cursor,
            )
            seen += page[:size]
            if len(page) <= size:
                break
            cursor = page[size - 1].cursor()
        assert key(seen) == key(everything), (params, size)


async def test_a_long_run_is_placed_by_its_last_event_and_counted_whole(reader):
    page = await reader.list_runs(SCOPE, parse_filters({}), None, 3)
    assert [r.run_id for r in page.runs][0] == "run-long"
    assert page.runs[0].blocks == 1 and page.runs[0].events == 2 and page.runs[0].outcome == "block"
