"""nats-server killed (SIGKILL) and restarted on the same port and store in the middle of a guardrail run flush,
a trust-broker burst and a prompt publish: nothing is lost or duplicated, and the services (never restarted)
recover by themselves. Each test starts its own server on a free port with its own store directory."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from stockade.testing.nats import NatsServer, NatsServerFactory

pytestmark = [pytest.mark.nats, pytest.mark.slow, pytest.mark.timeout(180)]
OUTAGE_S = 1.5


def kill_and_restart(server: NatsServer, log: list[str]) -> Callable[[], Any]:
    async def fault() -> None:
        await asyncio.to_thread(server.kill)
        log.append("killed")
        await asyncio.sleep(OUTAGE_S)  # the work goes on against a dead server meanwhile
        await asyncio.to_thread(server.restart)
        log.append("restarted")

    return fault


async def test_a_run_flush_survives_a_nats_kill(
    nats_server_factory: NatsServerFactory,
    clickhouse_dsn: str,
    clickhouse_client: Any,
    unique_name: Callable[[str], str],
    scenarios: Any,
) -> None:
    server = nats_server_factory()
    log: list[str] = []
    report = await scenarios.flush_through(
        server.url, clickhouse_dsn, clickhouse_client, unique_name("restart"), kill_and_restart(server, log)
    )
    assert log == ["killed", "restarted"]
    assert report.sent == 3000 and len(report.stored_ids) == 3000
    assert set(report.stored_ids.values()) == {1}, "an event stored twice"
    assert report.unsent_after_fault > 0, "the flush was over before the server came back"


async def test_a_trust_broker_burst_survives_a_nats_kill(
    nats_server_factory: NatsServerFactory, tmp_path: Path, scenarios: Any
) -> None:
    server = nats_server_factory()
    log: list[str] = []
    report = await scenarios.burst_through(server.url, tmp_path, kill_and_restart(server, log))
    assert log == ["killed", "restarted"]
    assert len(report.outcomes) == 600
    duplicates = [n for n, c in Counter(report.inbox).items() if c > 1]
    assert duplicates == [], "a message delivered twice"
    assert set(report.inbox) <= set(report.outcomes)
    # Known limit (deploy/README.md, "NATS faults"): agent inboxes are core NATS, at most once. A message whose
    # nonce was claimed but whose delivery was on the wire when the server died is lost (its sender's retry is a
    # replay). At most the messages in flight at the kill can be lost that way. The broker's "delivered" answer
    # leaves the server on the sender's connection and the message on the receiver's, so the answer can reach
    # the sender while the message dies with the server (seen: 2 of 600 in one run of 3): those are among the
    # lost, and bounded with them.
    lost = set(report.outcomes) - set(report.inbox)
    assert len(lost) <= report.senders, f"{len(lost)} lost, more than were in flight"
    confirmed = {n for n, outcome in report.outcomes.items() if outcome == "delivered"}
    confirmed_lost = confirmed - set(report.inbox)
    assert len(confirmed_lost) <= report.senders, f"{len(confirmed_lost)} told delivered but lost"
    assert report.replays_accepted == 0
    assert report.after == "delivered"


async def test_a_prompt_publish_survives_a_nats_kill(
    nats_server_factory: NatsServerFactory, tmp_path: Path, scenarios: Any
) -> None:
    server = nats_server_factory()
    log: list[str] = []
    report = await scenarios.publish_through(server.url, tmp_path, kill_and_restart(server, log))
    assert log == ["killed", "restarted"]
    assert report.unsent == 0
    assert set(report.in_stream) == set(report.enqueued) and len(report.enqueued) == 300
    assert set(report.in_stream.values()) == {1}, "an event relayed twice"
