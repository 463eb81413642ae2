"""Markers the plugin registers, and the rule that marks tests using a server fixture."""

from __future__ import annotations

import pytest

from stockade.testing.report import SERVERS, report_of

__all__ = ["MARKERS", "apply_server_markers", "register_markers"]

MARKERS: dict[str, str] = {
    "postgres": "uses a real PostgreSQL (postgres_url / postgres_database)",
    "nats": "uses a real NATS server with JetStream (nats_url / nats_client / nats_server_factory)",
    "clickhouse": "uses ClickHouse (clickhouse_client: chdb or CLICKHOUSE_URL)",
    "dynamodb": "uses a DynamoDB endpoint (dynamodb_endpoint / dynamodb_client: moto server or DYNAMODB_URL)",
    "mongo": "uses a MongoDB wire-protocol server (mongodb_url: mongoeco or MONGODB_URL)",
    "browser": "drives a real Chromium (chromium_executable / browser_page)",
    "e2e": "cross-service end-to-end test",
    "ml": "needs the ML extra (torch, transformers, sentence-transformers)",
    "slow": "takes more than a few seconds",
}


def register_markers(config: pytest.Config) -> None:
    for name, help_text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {help_text}")


def apply_server_markers(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Add the server's marker to every test that uses one of its fixtures (directly or not)."""
    report = report_of(config)
    for item in items:
        fixturenames = getattr(item, "fixturenames", ())
        for server in report.note_test(item.nodeid, list(fixturenames)):
            if item.get_closest_marker(server) is None:
                item.add_marker(server)
        # Tests that reach a server through getfixturevalue (parametrised sqlite/postgres fixtures) or that
        # start their own real one (e2e) carry the marker instead: they count for that server too.
        marked = [server for server in SERVERS if item.get_closest_marker(server) is not None]
        report.note_test(item.nodeid, [SERVERS[server][0] for server in marked])
