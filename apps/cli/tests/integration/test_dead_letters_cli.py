"""stockade admin dead-letters list / replay against a real nats-server with guardrail-ingest's streams."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import nats
import pytest
from typer.testing import CliRunner

from stockade.cli.admin import app
from stockade.contracts import GuardrailEventsReceived
from stockade.guardrail_ingest.dead_letters import dead_letter, publish_dead_letter
from stockade.guardrail_ingest.jetstream import ensure_stream
from stockade.guardrail_ingest.settings import StreamSettings

pytestmark = pytest.mark.nats

runner = CliRunner()
SETTINGS = StreamSettings()


def _record(n: int) -> dict[str, Any]:
    return {"event_id": f"ev-{n}", "run_id": "run-7", "kind": "check", "name": "pii", "payload": {"n": n}}


async def _seed(url: str, count: int) -> None:
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        await ensure_stream(js, SETTINGS)
        batch = GuardrailEventsReceived(db_type="dynamodb", events=[_record(n) for n in range(count)])
        for record in batch.events:
            letter = dead_letter(
                record, reason="dynamodb: item too large", attempts=5, batch=batch, sequence=3
            )
            await publish_dead_letter(js, SETTINGS, letter)
    finally:
        await nc.close()


async def _queued(url: str) -> list[str]:
    """Event ids in the events stream (what the sink workers will store)."""
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        info = await js.stream_info(SETTINGS.stream)
        ids: list[str] = []
        for seq in range(info.state.first_seq, info.state.last_seq + 1 if info.state.messages else 0):
            message = GuardrailEventsReceived.model_validate_json(
                (await js.get_msg(SETTINGS.stream, seq)).data or b""
            )
            assert message.event_id != uuid.UUID(int=0)
            ids += [r["event_id"] for r in message.events]
        return ids
    finally:
        await nc.close()


def _cli(*args: str, ok: bool = True) -> Any:
    result = runner.invoke(app, ["dead-letters", *args])
    if ok:
        assert result.exit_code == 0, result.output
    return result


def test_list_then_replay_one_then_all(nats_server_factory: Any) -> None:
    url = str(nats_server_factory().url)
    asyncio.run(_seed(url, 3))

    rows = [json.loads(line) for line in _cli("list", "--nats-url", url, "--json").stdout.splitlines()]
    assert [r["event_id"] for r in rows] == ["ev-0", "ev-1", "ev-2"]
    assert rows[0]["reason"] == "dynamodb: item too large" and rows[0]["attempts"] == 5
    assert rows[0]["record"] == _record(0) and rows[0]["db_type"] == "dynamodb"
    text = _cli("list", "--nats-url", url).stdout
    assert "event ev-1  run run-7  dynamodb  5 attempts  dynamodb: item too large" in text

    replayed = _cli("replay", str(rows[1]["sequence"]), "--nats-url", url, "--json").stdout
    assert json.loads(replayed) == {"replayed": 1, "not_found": []}
    assert asyncio.run(_queued(url)) == ["ev-1"]
    left = [
        json.loads(line)["event_id"] for line in _cli("list", "--nats-url", url, "--json").stdout.splitlines()
    ]
    assert left == ["ev-0", "ev-2"]

    missing = _cli("replay", str(rows[1]["sequence"]), "--nats-url", url, ok=False)
    assert missing.exit_code == 1 and "not found" in missing.stdout

    assert "replayed 2 event(s)" in _cli("replay", "--all", "--nats-url", url).stdout
    assert sorted(asyncio.run(_queued(url))) == ["ev-0", "ev-1", "ev-2"]
    assert _cli("list", "--nats-url", url).stdout.strip() == "no dead letters"


def test_nothing_listening_fails_fast_with_a_message() -> None:
    from stockade.testing.ports import free_port

    result = _cli("list", "--nats-url", f"nats://127.0.0.1:{free_port()}", ok=False)
    assert result.exit_code == 1 and "error: ConnectionError" in result.output
