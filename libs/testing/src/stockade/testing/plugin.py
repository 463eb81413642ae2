"""The ``stockade`` pytest plugin (entry point ``pytest11``): real-server fixtures, markers, summary.

Every server fixture takes ``<NAME>_URL`` from the environment if set, else starts the server
locally on a free port in a temp dir, else skips with a reason saying how to get it (``CI=true``
turns that skip into a failure). Heavy client libraries are imported inside the fixtures only.
"""

from __future__ import annotations

import pytest

from stockade.testing.browser import browser_page, chromium_browser, chromium_executable
from stockade.testing.clickhouse import clickhouse_client, clickhouse_dsn
from stockade.testing.dynamodb import dynamodb_client, dynamodb_endpoint
from stockade.testing.logstate import root_logger_restored
from stockade.testing.markers import apply_server_markers, register_markers
from stockade.testing.mongo import mongodb_client, mongodb_url
from stockade.testing.names import unique_name
from stockade.testing.nats import nats_client, nats_server_factory, nats_server_version, nats_url
from stockade.testing.postgres import postgres_database, postgres_url
from stockade.testing.report import report_of
from stockade.testing.watchdog import HangWatchdog

__all__ = [
    "browser_page",
    "chromium_browser",
    "chromium_executable",
    "clickhouse_client",
    "clickhouse_dsn",
    "dynamodb_client",
    "dynamodb_endpoint",
    "mongodb_client",
    "mongodb_url",
    "nats_client",
    "nats_server_factory",
    "nats_server_version",
    "nats_url",
    "postgres_database",
    "postgres_url",
    "root_logger_restored",
    "unique_name",
]


class _OutcomeTracker:
    """Per-run hook object (registered in pytest_configure) folding test reports into the server report."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        report_of(self.config).note_outcome(report)


def pytest_configure(config: pytest.Config) -> None:
    register_markers(config)
    report_of(config)
    config.pluginmanager.register(_OutcomeTracker(config), "stockade-outcome-tracker")
    config.pluginmanager.register(HangWatchdog(config), "stockade-hang-watchdog")


@pytest.hookimpl(tryfirst=True)  # before `-m` deselection looks at the markers
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    apply_server_markers(config, items)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    terminalreporter.write_sep("=", "stockade real servers")
    for line in report_of(config).summary_lines():
        terminalreporter.write_line(line)
