"""``stockade up``'s NATS runs deploy/nats's users and permissions with generated passwords (review N5)."""

from __future__ import annotations

import asyncio
import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nats
import pytest

from stockade.cli import nats_auth
from stockade.cli.stack import find_nats_server
from stockade.contracts import subjects
from stockade.contracts.nats_sync import sync_with_server
from stockade.testing.ports import free_port

pytestmark = pytest.mark.nats

DEPLOY = Path(__file__).resolve().parents[4] / "deploy" / "nats"


def test_the_packaged_configuration_is_deploy_nats() -> None:
    for name in ("nats-server.conf", "agents.conf"):
        assert nats_auth.shipped(name) == (DEPLOY / name).read_text(), (
            f"copy deploy/nats/{name} to nats_conf/"
        )


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[nats_auth.NatsAuth, int]]:
    port = free_port()
    auth = nats_auth.prepare(tmp_path, "127.0.0.1", port)
    proc = subprocess.Popen(
        [find_nats_server(), "-c", str(auth.config_path)],
        env={**os.environ, **auth.variables},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        yield auth, port
    finally:
        proc.terminate()
        proc.wait(timeout=10)


async def connect(port: int, errors: list[str], **options: Any) -> Any:
    async def on_error(exc: Exception) -> None:
        errors.append(str(exc).lower())

    for _ in range(200):  # the server starts in milliseconds; bounded
        try:
            return await nats.connect(
                f"nats://127.0.0.1:{port}",
                allow_reconnect=False,
                connect_timeout=2,
                error_cb=on_error,
                **options,
            )
        except (OSError, nats.errors.NoServersError):
            await asyncio.sleep(0.05)
    raise AssertionError("nats-server did not start")


async def test_credentials_are_private_and_nats_needs_them(
    server: tuple[nats_auth.NatsAuth, int], tmp_path: Path
) -> None:
    auth, port = server
    directory = tmp_path / "nats"
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    for name in ("credentials.json", "agents.env", "nats.conf", "agents.conf"):
        assert stat.S_IMODE((directory / name).stat().st_mode) == 0o600, name
    assert set(auth.passwords) >= {*nats_auth.SERVICE_USERS, "planner", "executor"}
    assert "password" not in auth.config_path.read_text().split("$NATS_")[0]  # no password in the config
    again = nats_auth.prepare(tmp_path, "127.0.0.1", port)
    assert again.passwords == auth.passwords  # kept across restarts
    errors: list[str] = []
    up = await connect(port, errors, user="planner", password=auth.passwords["planner"])  # the server runs
    await up.close()
    with pytest.raises(nats.errors.Error, match="(?i)authorization"):  # no anonymous access
        await nats.connect(f"nats://127.0.0.1:{port}", allow_reconnect=False, connect_timeout=2)
    with pytest.raises(nats.errors.Error, match="(?i)authorization"):
        await nats.connect(
            f"nats://127.0.0.1:{port}",
            user="planner",
            password="wrong",
            allow_reconnect=False,
            connect_timeout=2,
        )


async def test_agents_and_services_get_the_permissions_of_deploy_nats(
    server: tuple[nats_auth.NatsAuth, int],
) -> None:
    auth, port = server
    errors: list[str] = []
    planner = await connect(port, errors, user="planner", password=auth.passwords["planner"])
    ingest_errors: list[str] = []
    ingest = await connect(
        port, ingest_errors, user="guardrail-ingest", password=auth.passwords["guardrail-ingest"]
    )
    try:
        # What N5 exploited on the open bus: read runs, answer key checks, forge an inbox, write events.
        await planner.subscribe(subjects.APIKEY_CMD_VERIFY_INGEST)
        await planner.publish(subjects.GUARDRAIL_CMD_READ_RUNS, b"{}")
        await planner.publish(subjects.agent_inbox("executor"), b"forged")
        await planner.publish(subjects.GUARDRAIL_EVENTS, b"{}")
        await ingest.publish(subjects.GUARDRAIL_EVENTS, b"{}")  # the service's own subject: allowed
        await sync_with_server(planner, 5)
        await sync_with_server(ingest, 5)
        assert ingest_errors == []
        # N13: a service reads its own replies only, not another service's (nor the shared _INBOX.>)
        await ingest.subscribe(subjects.user_reply_prefix("guardrail-ingest") + ".>")
        await ingest.subscribe(subjects.user_reply_prefix("model-api") + ".>")
        await ingest.subscribe("_INBOX.>")
        await sync_with_server(ingest, 5)
    finally:
        await planner.close()
        await ingest.close()
    for what in (
        f'subscription to "{subjects.APIKEY_CMD_VERIFY_INGEST}"',
        f'publish to "{subjects.GUARDRAIL_CMD_READ_RUNS}"',
        'publish to "agent.executor.inbox"',
        f'publish to "{subjects.GUARDRAIL_EVENTS}"',
    ):
        assert any(f"permissions violation for {what}" in e for e in errors), (what, errors)
    refused = sorted(e.lower().split('"')[1] for e in ingest_errors if "permissions violation" in e.lower())
    assert refused == ["_inbox.>", "_inbox_model-api.>"], ingest_errors


def test_a_non_loopback_host_is_recognised() -> None:
    assert nats_auth.is_loopback("127.0.0.1") and nats_auth.is_loopback("::1")
    assert nats_auth.is_loopback("localhost")
    assert not nats_auth.is_loopback("0.0.0.0") and not nats_auth.is_loopback("192.168.1.4")


def test_the_demo_agents_are_granted_the_demo_projects_events_only(tmp_path: Path) -> None:
    auth = nats_auth.prepare(tmp_path, "127.0.0.1", 1, ["pdemo"])
    text = (auth.config_path.parent / "agents.conf").read_text()
    for agent in ("planner", "executor", "intern", "treasurer"):
        assert f'"agent.{agent}.inbox", "{subjects.prompt_published("pdemo")}", ' in text
        assert f'"{subjects.policy_published("pdemo")}", ' in text
    grants = "\n".join(line.split("#", 1)[0] for line in text.splitlines())
    assert grants.count("prompt.published.v1.") == 4  # one grant per agent, no other project, no wildcard
    assert grants.count("policy.published.v1.") == 4
    again = nats_auth.prepare(tmp_path, "127.0.0.1", 1)  # a later start: the projects of the first
    assert (again.config_path.parent / "agents.conf").read_text() == text


async def test_doctor_reports_the_authenticated_bus_as_up(server: tuple[nats_auth.NatsAuth, int]) -> None:
    from stockade.cli.doctor import _nats

    auth, port = server
    up = await connect(port, [], user="planner", password=auth.passwords["planner"])  # the server runs
    await up.close()
    probe = await _nats(f"nats://127.0.0.1:{port}")
    assert probe.reachable and "requires a user" in probe.note
