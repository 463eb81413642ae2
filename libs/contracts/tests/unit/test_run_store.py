"""The run store's read contract: one typed command with a required scope, bounded pages, no query text."""

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from stockade.contracts import RunScope, RunStoreRequest
from stockade.contracts.run_store import (
    MAX_EXPORT_PAGE,
    MAX_PAGE_RUNS,
    ExportEvents,
    GetRun,
    ListRuns,
    Overview,
    OverviewReply,
    RunCursor,
    RunQuery,
)

QUERY = RunQuery(since=datetime(2026, 1, 1, tzinfo=UTC), until=datetime(2026, 1, 2, tzinfo=UTC))
SCOPE = RunScope(projects=frozenset({"shop"}))


def test_every_command_round_trips_and_is_told_apart_by_its_name():
    for command in (
        ListRuns(scope=SCOPE, query=QUERY, limit=3),
        GetRun(scope=SCOPE, run_id="run/1", offset=5),
        ExportEvents(scope=SCOPE, query=QUERY, limit=10),
    ):
        assert RunStoreRequest.model_validate_json(command.to_bytes()).root == command


@pytest.mark.parametrize(
    "body",
    [
        b'{"read_id": "r", "sql": "SELECT 1"}',  # v1
        b'{"command": "sql", "sql": "SELECT 1"}',
        b'{"command": "get_run", "run_id": "r"}',  # no scope
        b'{"command": "get_run", "scope": {"projects": ["p"]}, "run_id": "r", "where": "1=1"}',
        b'{"command": "get_run", "scope": {"projects": ["p"], "all": true}, "run_id": "r"}',
        b'{"command": "get_run", "scope": {"projects": ["p\\u0085"]}, "run_id": "r"}',
    ],
)
def test_anything_else_is_refused(body):
    with pytest.raises(ValidationError):
        RunStoreRequest.model_validate_json(body)


def test_pages_are_bounded():
    with pytest.raises(ValidationError):
        ListRuns(scope=SCOPE, query=QUERY, limit=MAX_PAGE_RUNS + 1)
    with pytest.raises(ValidationError):
        ExportEvents(scope=SCOPE, query=QUERY, limit=MAX_EXPORT_PAGE + 1)


def test_a_scope_reads_its_projects_only():
    both = RunScope(projects=frozenset({"a", "b"}), unowned=True)
    assert both.stored_ids() == ["a", "b", ""] and both.allows(None) and not SCOPE.allows(None)
    assert both.narrowed("a").stored_ids() == ["a"] and both.narrowed("z").empty
    assert RunScope(projects=frozenset()).empty


def test_a_cursor_and_an_overview_survive_json():
    cursor = RunCursor(last_at=datetime(2026, 1, 1, 1, tzinfo=UTC), project_id="p", run_id="r")
    assert RunCursor.model_validate_json(cursor.to_bytes()) == cursor and cursor.encode()
    at = datetime(2026, 1, 1, tzinfo=UTC)
    overview = Overview(
        bucket_s=3600,
        buckets=[at],
        decisions={"pii": {at: (1, 2)}},
        top_findings=[("EMAIL", 3)],
        latency=[("pii", 1, 1.0, 2.0, 3.0)],
        trust_rejections=[],
    )
    assert OverviewReply.model_validate_json(OverviewReply(overview=overview).to_bytes()).overview == overview
