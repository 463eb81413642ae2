"""deploy/nats/nats-server.conf on a real nats-server: each user can do what deploy/README.md says, no more.

The server runs the real file with four substitutions only: the monitoring port (a free one instead of
8222), the JetStream store directory (the harness passes its own with ``-sd``, which may not appear twice),
the agents (two test agents, alice and bob, written in the shape agents.conf documents, instead of
``include agents.conf``) and the passwords (random, through the same environment variables compose sets).
The real agents.conf is checked separately with ``nats-server -t``.
"""

from __future__ import annotations

import asyncio
import os
import re
import secrets
import subprocess
import sys
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import nats
import pytest
from nats.aio.client import Client
from nats.js.errors import KeyWrongLastSequenceError

from stockade.contracts import subjects
from stockade.runtime.nats import serve_health
from stockade.testing.nats import NatsServer, NatsServerFactory, find_nats_server
from stockade.testing.ports import free_port

pytestmark = pytest.mark.nats

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "deploy" / "nats" / "nats-server.conf"
SERVICE_USERS = ("prompt-api", "model-api", "guardrail-ingest", "trust-broker")
TEST_AGENTS = """
users: [
  { user: alice, password: alice-test-password,
    permissions: { publish: { allow: ["trust.submit.*"] }, subscribe: { allow: ["agent.alice.inbox"] } } }
  { user: bob, password: bob-test-password,
    permissions: { publish: { allow: ["trust.submit.*"] }, subscribe: { allow: ["agent.bob.inbox"] } } }
]
"""


def password_variable(user: str) -> str:
    return "NATS_" + user.upper().replace("-", "_") + "_PASSWORD"


class Deployment:
    """The server started from the real config, and a way to connect as any of its users."""

    def __init__(self, server: NatsServer, passwords: dict[str, str], monitor_port: int) -> None:
        self.server = server
        self.passwords = passwords
        self.monitor_port = monitor_port

    async def connect(self, user: str, errors: list[str]) -> Client:
        async def on_error(exc: Exception) -> None:
            errors.append(str(exc))

        return await nats.connect(
            self.server.url,
            user=user,
            password=self.passwords[user],
            error_cb=on_error,
            allow_reconnect=False,
            connect_timeout=5,
        )


@pytest.fixture(scope="module")
def deployment(nats_server_factory: NatsServerFactory) -> Iterator[Deployment]:
    text = CONFIG.read_text()
    monitor_port = free_port()
    for expected in ("include agents.conf", "http: 0.0.0.0:8222", "store_dir: /data/jetstream"):
        assert expected in text
    text = text.replace("include agents.conf", TEST_AGENTS).replace("store_dir: /data/jetstream", "")
    text = text.replace("http: 0.0.0.0:8222", f"http: 127.0.0.1:{monitor_port}")
    passwords = {user: "pw" + secrets.token_hex(16) for user in SERVICE_USERS}  # see deploy/README.md
    passwords.update(alice="alice-test-password", bob="bob-test-password")
    with pytest.MonkeyPatch.context() as env:
        for user in SERVICE_USERS:
            env.setenv(password_variable(user), passwords[user])
        server = nats_server_factory(text)  # the child process inherits the passwords
    yield Deployment(server, passwords, monitor_port)
    server.stop()


class Session:
    """One connection per user, each with the server errors it received (permission violations)."""

    def __init__(self) -> None:
        self.clients: dict[str, Client] = {}
        self.errors: dict[str, list[str]] = {}

    async def flush(self) -> None:
        for client in self.clients.values():
            await client.flush(timeout=5)  # PONG comes after any -ERR for what was sent before

    def violations(self, user: str) -> list[str]:
        """Permission violations the server reported to ``user`` (nats-py lower-cases the message)."""
        return [e.lower() for e in self.errors[user] if "permissions violation" in e.lower()]


@pytest.fixture
async def session(deployment: Deployment) -> AsyncIterator[Session]:
    s = Session()
    for user in (*SERVICE_USERS, "alice", "bob"):
        s.errors[user] = []
        s.clients[user] = await deployment.connect(user, s.errors[user])
    yield s
    for client in s.clients.values():
        await client.close()


async def denied_publish(s: Session, user: str, subject: str) -> bool:
    before = len(s.violations(user))
    await s.clients[user].publish(subject, b"x")
    await s.flush()
    return any(f'"{subject.lower()}"' in v for v in s.violations(user)[before:])


async def denied_subscribe(s: Session, user: str, subject: str) -> bool:
    before = len(s.violations(user))
    await s.clients[user].subscribe(subject)
    await s.flush()
    return any(f'"{subject.lower()}"' in v for v in s.violations(user)[before:])


async def test_agent_envelope_reaches_the_receiver_only_through_the_trust_broker(session: Session) -> None:
    broker, alice, bob = session.clients["trust-broker"], session.clients["alice"], session.clients["bob"]
    submitted = await broker.subscribe(subjects.TRUST_SUBMIT_WILDCARD, queue=subjects.TRUST_BROKER_QUEUE)
    inbox = await bob.subscribe(subjects.agent_inbox("bob"))
    await session.flush()

    await alice.publish(subjects.trust_submit("bob"), b"envelope")
    received = await submitted.next_msg(timeout=5)
    assert (received.subject, received.data) == ("trust.submit.bob", b"envelope")

    await broker.publish(subjects.agent_inbox("bob"), b"verified")
    delivered = await inbox.next_msg(timeout=5)
    assert delivered.data == b"verified"
    assert session.violations("alice") == [] and session.violations("bob") == []


async def test_agents_cannot_bypass_the_broker_or_read_another_inbox(session: Session) -> None:
    assert await denied_subscribe(session, "alice", "agent.bob.inbox")
    assert await denied_publish(session, "alice", "agent.bob.inbox")
    assert await denied_subscribe(session, "alice", "trust.submit.*")
    assert await denied_subscribe(session, "bob", subjects.PROMPT_PUBLISHED)
    assert await denied_publish(session, "bob", subjects.PROMPT_PUBLISHED)


async def test_only_the_trust_broker_writes_agent_inboxes(session: Session) -> None:
    for user in ("prompt-api", "model-api", "guardrail-ingest"):
        assert await denied_publish(session, user, "agent.bob.inbox"), user
        assert await denied_subscribe(session, user, "trust.submit.*"), user


async def test_services_publish_only_their_own_events(session: Session) -> None:
    own = {
        "prompt-api": subjects.PROMPT_PUBLISHED,
        "model-api": subjects.MODEL_CHANGED,
        "guardrail-ingest": subjects.GUARDRAIL_EVENTS,
        "trust-broker": subjects.TRUST_REJECTED,
    }
    for user, subject in own.items():
        assert not await denied_publish(session, user, subject), user
        for other_user, other_subject in own.items():
            if other_user != user:
                assert await denied_publish(session, user, other_subject), (user, other_subject)


async def test_prompt_api_owns_the_prompts_stream_and_nothing_else(session: Session) -> None:
    js = session.clients["prompt-api"].jetstream(timeout=5)
    await js.add_stream(name="PROMPTS", subjects=list(subjects.STREAMS["PROMPTS"]))
    ack = await js.publish(subjects.PROMPT_PUBLISHED, b"{}", headers={"Nats-Msg-Id": "evt-1"})
    assert ack.stream == "PROMPTS"
    denied = session.clients["prompt-api"].jetstream(timeout=1)  # a denied API request is never answered
    with pytest.raises(Exception):
        await denied.add_stream(name="GUARDRAIL_EVENTS", subjects=[subjects.GUARDRAIL_EVENTS])
    with pytest.raises(Exception):
        await denied.delete_stream("PROMPTS")
    violations = session.violations("prompt-api")
    assert any('"$js.api.stream.create.guardrail_events"' in v for v in violations), violations
    assert any('"$js.api.stream.delete.prompts"' in v for v in violations), violations


async def test_guardrail_ingest_publishes_and_consumes_its_stream(session: Session) -> None:
    js = session.clients["guardrail-ingest"].jetstream(timeout=5)
    stream = "GUARDRAIL_EVENTS"
    await js.add_stream(name=stream, subjects=list(subjects.STREAMS[stream]))
    await js.publish(subjects.GUARDRAIL_EVENTS, b'{"event_id": "e1"}')
    consumer = await js.pull_subscribe(subjects.GUARDRAIL_EVENTS, durable="sink-workers", stream=stream)
    messages = await consumer.fetch(1, timeout=5)
    assert messages[0].data == b'{"event_id": "e1"}'
    await messages[0].ack_sync(timeout=5)
    await consumer.unsubscribe()
    # Dead letters: the sink workers publish them, `stockade admin dead-letters` reads and deletes them.
    dead = subjects.stream_for(subjects.GUARDRAIL_DEAD_LETTERED)
    await js.add_stream(name=dead, subjects=[subjects.GUARDRAIL_DEAD_LETTERED])
    ack = await js.publish(subjects.GUARDRAIL_DEAD_LETTERED, b'{"reason": "x"}', stream=dead)
    assert (await js.get_msg(dead, ack.seq)).data == b'{"reason": "x"}'
    assert await js.delete_msg(dead, ack.seq)
    kv = await js.create_key_value(bucket=subjects.KV_RATE_LIMITS)
    await kv.put("tenant-a", b"1")
    assert (await kv.get("tenant-a")).value == b"1"
    assert session.violations("guardrail-ingest") == []


async def test_trust_broker_nonce_bucket_refuses_a_replay(session: Session) -> None:
    js = session.clients["trust-broker"].jetstream(timeout=5)
    kv = await js.create_key_value(bucket=subjects.KV_TRUST_NONCES)
    await kv.create("nonce-1", b"seen")
    with pytest.raises(KeyWrongLastSequenceError):
        await kv.create("nonce-1", b"seen again")
    assert session.violations("trust-broker") == []


async def test_the_trust_broker_container_probe_passes_with_its_own_credentials(
    session: Session, deployment: Deployment
) -> None:
    # The HEALTHCHECK command of deploy/Dockerfile's trust-broker target, against a broker health responder.
    await serve_health(session.clients["trust-broker"], subjects.TRUST_HEALTH, "trust-broker")
    await session.flush()
    probe = [sys.executable, "-m", "stockade.runtime.probe", deployment.server.url]
    probe += ["--subject", subjects.TRUST_HEALTH, "--timeout", "5", "--user", "trust-broker"]
    ok = await asyncio.create_subprocess_exec(
        *probe, "--password", deployment.passwords["trust-broker"], stdout=subprocess.PIPE
    )
    assert await ok.wait() == 0
    wrong = await asyncio.create_subprocess_exec(
        *probe, "--password", "wrong", stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert await wrong.wait() == 1


async def test_monitoring_health_endpoint_used_by_compose_answers(deployment: Deployment) -> None:
    url = f"http://127.0.0.1:{deployment.monitor_port}/healthz?js-enabled-only=true"

    def get() -> Any:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status

    assert await asyncio.to_thread(get) == 200


def config_test(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    binary = find_nats_server()
    assert binary is not None
    return subprocess.run(
        [str(binary), "-t", "-c", str(CONFIG)], env=env, capture_output=True, text=True, timeout=30
    )


def test_real_config_with_the_real_agents_file_is_valid(deployment: Deployment) -> None:
    agent_variables = re.findall(r"\$([A-Z_][A-Z0-9_]*)", (CONFIG.parent / "agents.conf").read_text())
    env = {**os.environ, **{password_variable(u): "x" for u in SERVICE_USERS}}
    env.update({name: "x" for name in agent_variables})
    result = config_test(env)
    assert result.returncode == 0, result.stderr + result.stdout


def test_server_refuses_to_start_without_a_service_password(deployment: Deployment) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NATS_")}
    env.update({password_variable(u): "x" for u in SERVICE_USERS if u != "model-api"})
    result = config_test(env)
    assert result.returncode != 0
    assert "NATS_MODEL_API_PASSWORD" in result.stderr + result.stdout
