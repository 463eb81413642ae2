"""unique_name rules, URL redaction and the per-server outcome bookkeeping (no servers needed)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from stockade.testing.names import make_unique_name
from stockade.testing.report import ServerRecord, ServerReport, display_url


def test_unique_name_shape_and_uniqueness(unique_name) -> None:
    names = {unique_name("orders") for _ in range(200)}
    assert len(names) == 200
    for name in names:
        # Valid unquoted in PostgreSQL and ClickHouse, as JetStream stream/bucket and DynamoDB table names.
        assert re.fullmatch(r"orders_[0-9a-f]{8}", name)
        assert 3 <= len(name) <= 63


@pytest.mark.parametrize("prefix", ["Orders", "1abc", "a-b", "a.b", "with space", "x" * 55, ""])
def test_unique_name_rejects_prefixes_that_are_not_valid_everywhere(prefix: str) -> None:
    with pytest.raises(ValueError):
        make_unique_name(prefix)


def test_display_url_hides_passwords() -> None:
    assert display_url("postgresql://app:s3cret@db:5432/x") == "postgresql://app:***@db:5432/x"
    assert display_url("nats://127.0.0.1:4222") == "nats://127.0.0.1:4222"
    assert "s3cret" not in display_url("http://u:s3cret@ch.example:8123")


def _report(nodeid: str, when: str, outcome: str) -> pytest.TestReport:
    return pytest.TestReport(nodeid, ("f.py", 1, nodeid), {}, outcome, None, when, [])


def test_outcome_folding_and_summary_counts() -> None:
    report = ServerReport()
    report.record("postgres", ServerRecord("env POSTGRES_URL", "15.2", "postgresql://h:5432/postgres"))
    report.note_test("a", ["postgres_database", "postgres_url"])
    report.note_test("b", ["postgres_url"])
    report.note_test("c", ["postgres_url"])
    report.note_test("d", ["tmp_path"])
    for phase in ("setup", "call", "teardown"):
        report.note_outcome(_report("a", phase, "passed"))
    report.note_outcome(_report("b", "setup", "passed"))
    report.note_outcome(_report("b", "call", "passed"))
    report.note_outcome(_report("b", "teardown", "failed"))  # error in teardown: the test counts as failed
    report.note_outcome(_report("c", "setup", "skipped"))
    lines = report.summary_lines()
    assert lines[0] == (
        "PostgreSQL: env POSTGRES_URL, version 15.2, postgresql://h:5432/postgres; "
        "3 test(s): 1 passed, 1 failed, 1 skipped"
    )
    assert "NATS: not used" in lines
    assert "real-server tests: 3 ran: 1 passed, 1 failed, 1 skipped" in lines


def test_plugin_import_pulls_in_no_heavy_client_library() -> None:
    code = (
        "import sys, stockade.testing.plugin\n"
        "heavy = [m for m in ('chdb', 'moto', 'boto3', 'pymongo', 'nats', 'asyncpg', 'playwright',"
        " 'clickhouse_connect') if m in sys.modules]\n"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == ""
