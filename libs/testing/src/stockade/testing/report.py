"""Which real servers a run used, where they came from, and how their tests ended."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NoReturn

import pytest

from stockade.testing.availability import ci_enabled, server_unavailable

__all__ = ["SERVERS", "ServerRecord", "ServerReport", "display_url", "report_of"]

# Server name -> the fixtures that use it (a test using any of them, even indirectly, counts for it).
SERVERS: dict[str, tuple[str, ...]] = {
    "postgres": ("postgres_url", "postgres_database"),
    "nats": ("nats_url", "nats_client", "nats_server_factory"),
    "clickhouse": ("clickhouse_dsn", "clickhouse_client"),
    "dynamodb": ("dynamodb_endpoint", "dynamodb_client"),
    "mongo": ("mongodb_url", "mongodb_client"),
    "browser": ("chromium_executable", "chromium_browser", "browser_page"),
}

_LABELS = {
    "postgres": "PostgreSQL",
    "nats": "NATS",
    "clickhouse": "ClickHouse",
    "dynamodb": "DynamoDB",
    "mongo": "MongoDB",
    "browser": "Chromium",
}


@dataclass
class ServerRecord:
    """Where one server came from. ``origin`` is e.g. ``"env POSTGRES_URL"`` or ``"started locally"``."""

    origin: str
    version: str | None = None
    address: str | None = None
    unavailable: str | None = None
    pid: int | None = None  # the server process, when the harness started one

    def describe(self) -> str:
        if self.unavailable is not None:
            return f"unavailable ({self.unavailable})"
        parts = [self.origin]
        if self.version:
            parts.append(f"version {self.version}")
        if self.address:
            parts.append(self.address)
        return ", ".join(parts)


@dataclass
class ServerReport:
    """Collected during the run, printed by ``pytest_terminal_summary``."""

    records: dict[str, ServerRecord] = field(default_factory=dict)
    extra_servers: dict[str, list[ServerRecord]] = field(default_factory=dict)
    tests_by_server: dict[str, set[str]] = field(default_factory=dict)
    outcomes: dict[str, str] = field(default_factory=dict)

    def record(self, server: str, record: ServerRecord) -> None:
        self.records[server] = record

    def unavailable(self, server: str, origin: str, why: str, reason: str) -> NoReturn:
        """Record ``server`` as unavailable (``why``, for the summary), then skip the test or, under CI=true,
        fail it (:func:`~stockade.testing.availability.server_unavailable`; ``reason`` says how to get one)."""
        self.record(server, ServerRecord(origin, unavailable=why))
        server_unavailable(_LABELS[server], reason)

    def record_extra(self, server: str, record: ServerRecord) -> None:
        self.extra_servers.setdefault(server, []).append(record)

    def note_test(self, nodeid: str, fixturenames: list[str] | tuple[str, ...]) -> list[str]:
        """Remember which servers the test uses; return their names."""
        used = [name for name, fixtures in SERVERS.items() if any(f in fixturenames for f in fixtures)]
        for name in used:
            self.tests_by_server.setdefault(name, set()).add(nodeid)
        return used

    def note_outcome(self, report: pytest.TestReport) -> None:
        """Fold one phase report into the test's final outcome (failed > skipped > passed)."""
        current = self.outcomes.get(report.nodeid)
        if report.failed:
            self.outcomes[report.nodeid] = "failed"
        elif report.skipped and current != "failed":
            self.outcomes[report.nodeid] = "skipped"
        elif report.passed and report.when == "call" and current is None:
            self.outcomes[report.nodeid] = "passed"

    def summary_lines(self) -> list[str]:
        lines = []
        for name in SERVERS:
            label = _LABELS[name]
            nodeids = self.tests_by_server.get(name, set())
            counts = {"passed": 0, "failed": 0, "skipped": 0}
            for nodeid in nodeids:
                outcome = self.outcomes.get(nodeid)
                if outcome in counts:
                    counts[outcome] += 1
            ran = sum(counts.values())
            record = self.records.get(name)
            if ran == 0 and record is None:
                lines.append(f"{label}: not used")
                continue
            where = record.describe() if record is not None else "not started"
            extras = self.extra_servers.get(name, [])
            if extras:
                where += f"; plus {len(extras)} extra server(s) started by tests"
            lines.append(
                f"{label}: {where}; {ran} test(s): "
                f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped"
            )
        unique = set().union(*self.tests_by_server.values()) if self.tests_by_server else set()
        overall = {"passed": 0, "failed": 0, "skipped": 0}
        for nodeid in unique:
            outcome = self.outcomes.get(nodeid)
            if outcome in overall:
                overall[outcome] += 1
        lines.append(
            f"real-server tests: {sum(overall.values())} ran: {overall['passed']} passed, "
            f"{overall['failed']} failed, {overall['skipped']} skipped"
        )
        if ci_enabled():
            lines.append("CI=true: a test skipped for lack of a server is reported as a failure")
        return lines


_KEY = pytest.StashKey[ServerReport]()


def report_of(config: pytest.Config) -> ServerReport:
    """The run's :class:`ServerReport`, created on first use."""
    if _KEY not in config.stash:
        config.stash[_KEY] = ServerReport()
    return config.stash[_KEY]


def display_url(url: str) -> str:
    """``url`` with any password replaced by ``***`` (for summaries and skip reasons)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    netloc = f"{parts.username or ''}:***@{host}"
    return urlunsplit(parts._replace(netloc=netloc))
