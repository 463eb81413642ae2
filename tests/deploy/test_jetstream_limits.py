"""Every JetStream stream and key-value bucket Stockade creates has a byte and an age limit.

A real nats-server runs deploy/nats/nats-server.conf (its 8 GB file store; the substitutions of
test_nats_permissions.py). Then, each with its own NATS user: guardrail-ingest starts (its two streams), the
trust-broker starts (TRUST, the nonce bucket), the outbox relay prompt-api and model-api run sends one event of
each of their subjects (PROMPTS, MODELS, IDENTITY), and the NATS rate-limit backend counts once (its bucket).
The server's monitoring endpoint then lists every stream of the STOCKADE account with its configuration.

Before: only the dead-letter stream had a byte limit; the events stream kept stored batches for 7 days without
one, and the outbox streams and the rate-limit bucket had no limit at all.
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import nats
import pytest
import yaml
from pydantic import SecretStr
from sqlalchemy.orm import DeclarativeBase

from stockade.contracts import ApiKeyRevoked, ModelChanged, PromptPublished, subjects
from stockade.contracts.limits import BUCKET_MAX_BYTES, STREAM_LIMITS
from stockade.guardrail_ingest.main import create_app as create_ingest
from stockade.guardrail_ingest.settings import GuardrailIngestSettings, StreamSettings
from stockade.guardrails.policies import NatsKVCounterStore
from stockade.runtime.db import create_engine, session_factory
from stockade.runtime.outbox import OutboxColumns, OutboxRelay, enqueue, given_connection
from stockade.runtime.settings import DatabaseSettings, NatsSettings, OutboxSettings
from stockade.testing.nats import NatsServerFactory
from stockade.testing.ports import free_port
from stockade.trust_broker.main import create_app as create_broker
from stockade.trust_broker.settings import TrustBrokerSettings

pytestmark = pytest.mark.nats

CONFIG = Path(__file__).resolve().parents[2] / "deploy" / "nats" / "nats-server.conf"
USERS = ("prompt-api", "model-api", "guardrail-ingest", "trust-broker")
NS = 1_000_000_000


class Base(DeclarativeBase):
    pass


class Outbox(OutboxColumns, Base):
    __tablename__ = "limits_outbox"


def _password(user: str) -> str:
    return "pw" + user.replace("-", "") + secrets.token_hex(8)  # NATS parses $VAR values: start with a letter


@pytest.fixture
def deployment(
    nats_server_factory: NatsServerFactory, monkeypatch: pytest.MonkeyPatch
) -> tuple[Any, int, dict]:
    text = CONFIG.read_text()
    monitor = free_port()
    text = text.replace("include agents.conf", "users: []").replace("store_dir: /data/jetstream", "")
    text = text.replace("http: 0.0.0.0:8222", f"http: 127.0.0.1:{monitor}")
    passwords = {user: _password(user) for user in USERS}
    for user, password in passwords.items():
        monkeypatch.setenv("NATS_" + user.upper().replace("-", "_") + "_PASSWORD", password)
    return nats_server_factory(text), monitor, passwords


def _streams(monitor: int) -> dict[str, dict[str, Any]]:
    """Every stream of the STOCKADE account, by name, with its configuration (monitoring endpoint /jsz)."""
    url = f"http://127.0.0.1:{monitor}/jsz?accounts=true&streams=true&config=true"
    with urllib.request.urlopen(url, timeout=5) as reply:  # noqa: S310 - a local test server
        jsz = json.load(reply)
    [account] = [a for a in jsz["account_details"] if a["name"] == "STOCKADE"]
    return {s["name"]: s["config"] for s in account.get("stream_detail", [])}


async def _outbox_round(url: str, user: str, password: str, events: list[Any], tmp: Path) -> None:
    engine = create_engine(f"sqlite+aiosqlite:///{tmp / (user + '.db')}")
    async with engine.begin() as conn:
        await conn.run_sync(Base.metadata.create_all)
    sessions = session_factory(engine)
    async with sessions() as session:
        for event in events:
            enqueue(session, Outbox, event)
        await session.commit()
    nc = await nats.connect(url, user=user, password=password, inbox_prefix=subjects.user_reply_prefix(user))
    try:
        relay = OutboxRelay(sessions, Outbox, given_connection(nc), OutboxSettings())
        assert await relay.flush() == len(events)
    finally:
        await nc.close()
        await engine.dispose()


@pytest.fixture
def trust_yaml(tmp_path: Path) -> Path:
    agent = {
        "id": "planner",
        "trust": "trusted",
        "capabilities": ["summarize"],
        "keys": [{"id": "k1", "secret": "p" * 32}],
    }
    path = tmp_path / "trust.yaml"
    path.write_text(yaml.safe_dump({"guardrails": {"trust": {"agents": [agent]}}}))
    return path


@pytest.fixture
async def started(deployment: tuple[Any, int, dict], trust_yaml: Path, tmp_path: Path) -> AsyncIterator[int]:
    server, monitor, passwords = deployment
    ingest = create_ingest(
        GuardrailIngestSettings(
            nats=NatsSettings(
                url=server.url, user="guardrail-ingest", password=SecretStr(passwords["guardrail-ingest"])
            ),
            db=DatabaseSettings(url="sqlite+aiosqlite:///:memory:"),
            jetstream=StreamSettings(workers=0),
        )
    )
    broker = create_broker(
        TrustBrokerSettings(
            config_path=trust_yaml,
            nats=NatsSettings(
                url=server.url, user="trust-broker", password=SecretStr(passwords["trust-broker"])
            ),
        )
    )
    async with ingest.router.lifespan_context(ingest):
        await broker.start()
        try:
            prompt = PromptPublished(
                project_id="p", prompt_name="n", version=1, sha256="ab", published_by="u"
            )
            await _outbox_round(server.url, "prompt-api", passwords["prompt-api"], [prompt], tmp_path)
            model = ModelChanged(db_config_id="c", provider="acme", model_id="m", change="created")
            revoked = ApiKeyRevoked(key_id="k", owner_id="u")
            await _outbox_round(server.url, "model-api", passwords["model-api"], [model, revoked], tmp_path)
            user_url = server.url.replace(
                "nats://", f"nats://guardrail-ingest:{passwords['guardrail-ingest']}@"
            )
            counters = NatsKVCounterStore(url=user_url, bucket=subjects.KV_RATE_LIMITS)
            assert await counters.add("session-1", 1) == (True, 1)
            await counters.close()
            yield monitor
        finally:
            await broker.stop()


async def test_every_stream_and_bucket_has_byte_and_age_limits(started: int) -> None:
    streams = await asyncio.to_thread(_streams, started)
    buckets = {f"KV_{b}" for b in (subjects.KV_TRUST_NONCES, subjects.KV_RATE_LIMITS)}
    assert set(streams) == set(subjects.STREAMS) | buckets  # every one of them was created here
    for name, config in streams.items():
        assert config.get("max_bytes", -1) > 0, f"{name} has no byte limit"
        assert config.get("max_age", 0) > 0, f"{name} has no age limit"
    for name, limits in STREAM_LIMITS.items():
        config = streams[name]
        assert config["max_bytes"] == limits.max_bytes and config["max_age"] == limits.max_age_s * NS, name
        assert config["discard"] == limits.discard, name
    for bucket, max_bytes in BUCKET_MAX_BYTES.items():
        config = streams[f"KV_{bucket}"]
        assert config["max_bytes"] == max_bytes and config["discard"] == "new", bucket
    assert streams["GUARDRAIL_EVENTS"]["retention"] == "workqueue"  # a stored batch leaves the stream
    # JetStream reserves each max_bytes from the file store: the sum must fit the deployment's store.
    store = re.search(r"max_file_store:\s*(\d+)GB", CONFIG.read_text())
    assert store is not None
    assert sum(c["max_bytes"] for c in streams.values()) < int(store.group(1)) * 1000**3
