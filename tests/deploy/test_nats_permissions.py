"""deploy/nats/nats-server.conf and agents.conf on a real nats-server: each user can do what deploy/README.md
and deploy/nats/README.md say, no more.

The server (the ``deployment`` fixture of ``tests/deploy/conftest.py``) runs the real files with three
substitutions only: the monitoring port, the JetStream store directory (the harness passes its own with ``-sd``)
and ``include agents.conf`` replaced by that file's text (the harness writes the config elsewhere); passwords
come through the same environment variables compose sets. Agents here are the shipped ``planner`` and
``executor``.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from nats.aio.client import Client
from nats.js.errors import BucketNotFoundError, KeyWrongLastSequenceError

from stockade.contracts import subjects
from stockade.contracts.nats_sync import sync_with_server
from stockade.runtime.nats import serve_health
from stockade.testing.nats import find_nats_server

pytestmark = pytest.mark.nats

AGENTS = ("planner", "executor")
SERVICE_USERS = ("prompt-api", "model-api", "guardrail-ingest", "trust-broker")
CONFIG = Path(__file__).resolve().parents[2] / "deploy" / "nats" / "nats-server.conf"


def password_variable(user: str) -> str:
    return "NATS_" + user.upper().replace("-", "_") + "_PASSWORD"


class Session:
    """One connection per user, each with the server errors it received (permission violations)."""

    def __init__(self) -> None:
        self.clients: dict[str, Client] = {}
        self.errors: dict[str, list[str]] = {}

    async def flush(self) -> None:
        for client in self.clients.values():
            await sync_with_server(client, 5)  # any -ERR for what was sent before has been read

    def violations(self, user: str) -> list[str]:
        """Permission violations the server reported to ``user`` (nats-py lower-cases the message)."""
        return [e.lower() for e in self.errors[user] if "permissions violation" in e.lower()]


@pytest.fixture
async def session(deployment: Any) -> AsyncIterator[Session]:
    s = Session()
    for user in (*SERVICE_USERS, *AGENTS):
        s.errors[user] = []
        # services as stockade.runtime connects them: replies on their own prefix (agents: see the agent tests)
        own = {"inbox_prefix": subjects.user_reply_prefix(user)} if user in SERVICE_USERS else {}
        s.clients[user] = await deployment.connect(user, s.errors[user], **own)
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
    broker, planner, executor = (
        session.clients["trust-broker"],
        session.clients["planner"],
        session.clients["executor"],
    )
    submitted = await broker.subscribe(subjects.TRUST_SUBMIT_WILDCARD, queue=subjects.TRUST_BROKER_QUEUE)
    inbox = await executor.subscribe(subjects.agent_inbox("executor"))
    await session.flush()

    await planner.publish(subjects.trust_submit("executor"), b"envelope")
    received = await submitted.next_msg(timeout=5)
    assert (received.subject, received.data) == ("trust.submit.executor", b"envelope")

    await broker.publish(subjects.agent_inbox("executor"), b"verified")
    delivered = await inbox.next_msg(timeout=5)
    assert delivered.data == b"verified"
    assert session.violations("planner") == [] and session.violations("executor") == []


async def test_agents_cannot_bypass_the_broker_or_read_another_inbox(session: Session) -> None:
    assert await denied_subscribe(session, "planner", "agent.executor.inbox")
    assert await denied_publish(session, "planner", "agent.executor.inbox")
    assert await denied_subscribe(session, "planner", "trust.submit.*")
    assert await denied_publish(session, "executor", subjects.PROMPT_PUBLISHED)
    for subject in (
        subjects.SKILL_PUBLISHED,
        subjects.TRUST_REJECTED,
        subjects.APIKEY_REVOKED,
        "_INBOX.>",
    ):
        assert await denied_subscribe(session, "executor", subject), subject
    assert await denied_subscribe(session, "planner", "_INBOX_executor.>")


async def test_each_service_reads_only_its_own_replies(session: Session, deployment: Any) -> None:
    """Finding N13: a service subscribes to its own reply prefix only, so none reads another's replies (run reads,
    ingest-key verdicts, JetStream API answers); a request on its own prefix is answered."""
    for user in SERVICE_USERS:
        assert not await denied_subscribe(session, user, f"{subjects.user_reply_prefix(user)}.>"), user
        assert await denied_subscribe(session, user, "_INBOX.>"), user
        for other in SERVICE_USERS:
            if other != user:
                theirs = subjects.user_reply_prefix(other)
                assert await denied_subscribe(session, user, f"{theirs}.>"), (user, other)
                assert await denied_subscribe(session, user, f"{theirs}.abc.def"), (user, other)
    # guardrail-ingest asks model-api about an ingest key: the verdict reaches guardrail-ingest's own inbox
    model_api, ingest = session.clients["model-api"], session.clients["guardrail-ingest"]

    async def verdict(msg: Any) -> None:
        await msg.respond(b"verdict")

    await model_api.subscribe(subjects.APIKEY_CMD_VERIFY_INGEST, cb=verdict)
    await session.flush()
    reply = await ingest.request(subjects.APIKEY_CMD_VERIFY_INGEST, b"{}", timeout=5)
    assert reply.data == b"verdict" and reply.subject.startswith("_INBOX_guardrail-ingest.")
    # the same user on the shared default prefix gets no answer: its replies would go where it may not read
    errors: list[str] = []
    shared = await deployment.connect("guardrail-ingest", errors)
    try:
        with pytest.raises(Exception):
            await shared.request(subjects.APIKEY_CMD_VERIFY_INGEST, b"{}", timeout=1)
    finally:
        await shared.close()
    assert any('subscription to "_inbox.' in e.lower() for e in errors), errors


async def test_only_the_trust_broker_writes_agent_inboxes(session: Session) -> None:
    for user in ("prompt-api", "model-api", "guardrail-ingest"):
        assert await denied_publish(session, user, "agent.executor.inbox"), user
        assert await denied_subscribe(session, user, "trust.submit.*"), user


async def test_services_publish_only_their_own_events(session: Session) -> None:
    own = {
        "prompt-api": subjects.prompt_published("p1"),
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
    ack = await js.publish(subjects.prompt_published("p1"), b"{}", headers={"Nats-Msg-Id": "evt-1"})
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
    try:  # the trust-broker of test_agent_bus.py may have made it on this server already
        kv = await js.key_value(subjects.KV_TRUST_NONCES)
    except BucketNotFoundError:
        kv = await js.create_key_value(bucket=subjects.KV_TRUST_NONCES, ttl=120)
    nonce = "nonce-" + os.urandom(8).hex()
    await kv.create(nonce, b"seen")
    with pytest.raises(KeyWrongLastSequenceError):
        await kv.create(nonce, b"seen again")
    assert session.violations("trust-broker") == []


async def test_the_trust_broker_container_probe_passes_with_its_own_credentials(
    session: Session, deployment: Any
) -> None:
    # The HEALTHCHECK command of deploy/Dockerfile's trust-broker target (and the Kubernetes probes), against a
    # broker health responder: the password comes from the environment, never the command line (finding L8).
    await serve_health(session.clients["trust-broker"], subjects.TRUST_HEALTH, "trust-broker")
    await session.flush()
    dockerfile = (CONFIG.parents[1] / "Dockerfile").read_text()
    manifest = (CONFIG.parents[1] / "k8s" / "trust-broker.yaml").read_text()
    assert "--password-env TRUST_BROKER_NATS__PASSWORD" in dockerfile and "--password " not in dockerfile
    assert manifest.count("--password-env TRUST_BROKER_NATS__PASSWORD") == 2 and "--password " not in manifest
    probe = [sys.executable, "-m", "stockade.runtime.probe", deployment.server.url]
    probe += ["--subject", subjects.TRUST_HEALTH, "--timeout", "5", "--user", "trust-broker"]
    probe += ["--password-env", "TRUST_BROKER_NATS__PASSWORD"]
    for password, status in ((deployment.passwords["trust-broker"], 0), ("wrong", 1)):
        env = {**os.environ, "TRUST_BROKER_NATS__PASSWORD": password}
        run = await asyncio.create_subprocess_exec(
            *probe, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        assert await run.wait() == status, password


async def test_monitoring_health_endpoint_used_by_compose_answers(deployment: Any) -> None:
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


def test_real_config_with_the_real_agents_file_is_valid(deployment: Any) -> None:
    agent_variables = re.findall(r"\$([A-Z_][A-Z0-9_]*)", (CONFIG.parent / "agents.conf").read_text())
    env = {**os.environ, **{password_variable(u): "x" for u in SERVICE_USERS}}
    env.update({name: "x" for name in agent_variables})
    result = config_test(env)
    assert result.returncode == 0, result.stderr + result.stdout


def test_server_refuses_to_start_without_a_service_password(deployment: Any) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NATS_")}
    env.update({password_variable(u): "x" for u in SERVICE_USERS if u != "model-api"})
    result = config_test(env)
    assert result.returncode != 0
    assert "NATS_MODEL_API_PASSWORD" in result.stderr + result.stdout


# --- what an agent uses: agents.conf and the code name the same subjects and bucket ---------------------------


def agent_blocks() -> dict[str, tuple[set[str], set[str]]]:
    """``agent id -> (publish allow, subscribe allow)`` of every user in the shipped agents.conf."""
    text = (CONFIG.parent / "agents.conf").read_text()
    text = "\n".join(line.split("#", 1)[0] for line in text.splitlines())
    blocks: dict[str, tuple[set[str], set[str]]] = {}
    for block in re.split(r"(?m)^\s*user:", text)[1:]:
        user = block.split()[0]
        publish = re.search(r"publish:\s*\{\s*allow:\s*\[(.*?)\]", block, re.S)
        subscribe = re.search(r"subscribe:\s*\{\s*allow:\s*\[(.*?)\]", block, re.S)
        assert publish and subscribe, user
        assert "deny" not in block, user
        blocks[user] = (
            set(re.findall(r'"([^"]+)"', publish[1])),
            set(re.findall(r'"([^"]+)"', subscribe[1])),
        )
    return blocks


def rate_limit_grants(bucket: str) -> set[str]:
    """The JetStream API the guardrails NATS rate limiter uses: bind or create its bucket, get and update keys."""
    stream = f"KV_{bucket}"
    return {
        f"$KV.{bucket}.>",
        f"$JS.API.STREAM.INFO.{stream}",
        f"$JS.API.STREAM.CREATE.{stream}",
        f"$JS.API.STREAM.MSG.GET.{stream}",
    }


def test_agents_conf_grants_exactly_what_the_agent_code_uses() -> None:
    import inspect

    from stockade.client import push
    from stockade.guardrails.llm import catalogue
    from stockade.guardrails.policies.config import NatsBackendConfig
    from stockade.guardrails.policies.counters.nats_kv import NatsKVCounterStore

    # The library's default bucket is the contracts constant; an agent's is its own, named by the contracts.
    assert NatsBackendConfig().bucket == subjects.KV_RATE_LIMITS
    assert inspect.signature(NatsKVCounterStore).parameters["bucket"].default == subjects.KV_RATE_LIMITS
    blocks = agent_blocks()
    assert set(blocks) == {"planner", "executor", "intern", "treasurer"}
    for agent, (publish, subscribe) in blocks.items():
        assert publish == {
            subjects.TRUST_SUBMIT_WILDCARD,  # AgentBus.send()
            catalogue.MODEL_CMD_GET,  # CatalogueClient.get()
        } | rate_limit_grants(NatsBackendConfig(agent_id=agent).bucket), agent
        assert NatsBackendConfig(agent_id=agent).bucket == subjects.rate_limit_bucket(agent)
        assert subscribe == {
            subjects.agent_inbox(agent),  # AgentBus.inbox()
            subjects.agent_replies(agent),  # AgentBus.send(): the broker's answers
            subjects.agent_reply_prefix(agent) + ".>",  # replies: AgentBus.send(), rate limiter, catalogue
            # stockade.client push refresh: prompt.published.v1.<project>, added per project by the operator
            catalogue.MODEL_CHANGED,  # CatalogueClient cache invalidation
            catalogue.DBCONFIG_ACTIVATED,  # CatalogueClient: another configuration's catalogue is active
        }, agent
    # What agents read from the services' account is exported to them, and nothing more.
    server = "\n".join(line.split("#", 1)[0] for line in CONFIG.read_text().splitlines())
    exports = re.search(r"exports:\s*\[(.*?)\n\s*\]", server, re.S)
    assert exports is not None
    assert set(re.findall(r'(stream|service):\s*"([^"]+)"', exports[1])) == {
        ("stream", subjects.AGENT_INBOX_WILDCARD),
        ("stream", subjects.AGENT_REPLY_WILDCARD),
        ("service", subjects.TRUST_SUBMIT_WILDCARD),
        ("stream", push.PROMPT_PUBLISHED_WILDCARD),
        (
            "stream",
            subjects.POLICY_PUBLISHED_WILDCARD,
        ),  # GuardrailSystem.from_platform (stockade.client push)
        ("service", catalogue.MODEL_CMD_GET),
        ("stream", catalogue.MODEL_CHANGED),
        ("stream", catalogue.DBCONFIG_ACTIVATED),
    }


async def test_an_agent_runs_the_guardrails_rate_limiter_with_its_own_credentials(
    session: Session, deployment: Any
) -> None:
    from stockade.guardrails.policies.config import RateLimitsConfig
    from stockade.guardrails.policies.rate_limits import RateLimiter

    host = deployment.server.url.removeprefix("nats://")
    url = f"nats://planner:{deployment.passwords['planner']}@{host}"
    config = RateLimitsConfig.model_validate(
        {
            "requests_per_session": 2,
            "backend": "nats",
            "nats": {"url": url, "agent_id": "planner", "timeout_seconds": 5},
        }
    )
    limiter = RateLimiter(config)
    session_id = "session-" + os.urandom(4).hex()
    try:
        verdicts = [await limiter.before_request(session_id) for _ in range(3)]
    finally:
        await limiter.store.close()  # type: ignore[attr-defined]
    assert [v.passed for v in verdicts] == [True, True, False]
    # Without its reply prefix an agent cannot even bind its bucket: replies on _INBOX.> are not its to read.
    js = session.clients["executor"].jetstream(timeout=1)
    with pytest.raises(Exception):
        await js.key_value(subjects.rate_limit_bucket("executor"))
    # No other stream, and none of the services' JetStream.
    agent = await deployment.connect(
        "planner", session.errors["planner"], inbox_prefix=subjects.agent_reply_prefix("planner")
    )
    try:
        denied = agent.jetstream(timeout=1)
        with pytest.raises(Exception):
            await denied.add_stream(name="AGENT_NOTES", subjects=["notes.>"])
        with pytest.raises(Exception):
            await denied.delete_stream(f"KV_{subjects.rate_limit_bucket('planner')}")
        await sync_with_server(agent, 5)
    finally:
        await agent.close()
    violations = session.violations("planner")
    assert any('"$js.api.stream.create.agent_notes"' in v for v in violations), violations
    assert any(
        f'"$js.api.stream.delete.kv_{subjects.rate_limit_bucket("planner")}"' in v for v in violations
    ), violations


async def test_an_agent_runs_stockade_client_push_refresh_with_its_own_credentials(
    session: Session, deployment: Any
) -> None:
    from stockade.client import ClientSettings, PushSettings
    from stockade.client.cache import prompt_key
    from stockade.client.core import ClientCore
    from stockade.client.push import PromptPushSubscription
    from stockade.contracts import PromptPublished

    host = deployment.server.url.removeprefix("nats://")
    url = f"nats://planner:{deployment.passwords['planner']}@{host}"
    push_settings = PushSettings(nats_url=url, project_ids=("p1",))  # the project the planner works for
    core = ClientCore("stk_test", ClientSettings(push=push_settings), "http://prompt-api")
    core.cache.put(prompt_key("p1", "greeting"), {"version": 1}, etag='"v1"')
    stale: list[tuple[str, str]] = []
    push = PromptPushSubscription(core, lambda project, name: stale.append((project, name)))
    await push.start()
    try:
        # The import across accounts may take a moment to carry the agent's interest to prompt-api's account
        # (one CI run missed a single publish), so publish until heard: the cached copy is invalidated once,
        # so a second delivery cannot add a second entry.
        for attempt in range(50):
            event = PromptPublished(
                project_id="p1",
                prompt_name="greeting",
                version=2 + attempt,
                sha256="0" * 64,
                published_by="u",
            )
            await session.clients["prompt-api"].publish(
                event.address(), event.to_bytes(), headers=event.headers()
            )
            await session.flush()
            for _ in range(20):
                if stale:
                    break
                await asyncio.sleep(0.01)
            if stale:
                break
    finally:
        await push.stop()
    assert stale == [("p1", "greeting")]  # the cached copy was invalidated and a refresh asked for
    assert await denied_publish(session, "planner", subjects.prompt_published("p1"))


async def test_an_agent_looks_models_up_in_the_catalogue_with_its_own_credentials(
    session: Session, deployment: Any
) -> None:
    """LLMRails' catalogue client, run as an agent: the look-up crosses to model-api's account and back, and a
    change event or an activation from model-api reaches the agent and drops its cached entries."""
    from stockade.contracts import ModelChanged
    from stockade.contracts.replies import ModelGetReply
    from stockade.guardrails.llm.catalogue import CatalogueClient

    model_api = session.clients["model-api"]
    answers = 0

    async def answer(msg: Any) -> None:  # model-api's responder, as its own NATS user
        nonlocal answers
        answers += 1
        record = {"model_id": "gpt-x", "inputPricePerMToken": 0.5 * answers, "outputPricePerMToken": 1.0}
        reply = ModelGetReply(db_config={"id": "c", "name": "default"}, provider="openai", model=record)
        await msg.respond(reply.to_bytes())

    await model_api.subscribe(subjects.MODEL_CMD_GET, cb=answer)
    await sync_with_server(model_api)
    agent = await deployment.connect(
        "planner", session.errors["planner"], inbox_prefix=subjects.agent_reply_prefix("planner")
    )
    client = CatalogueClient(agent, timeout=5)
    try:
        await client.start()
        first = await client.get("openai", "gpt-x")
        assert first is not None and client.requests == 1
        assert await client.get("openai", "gpt-x") == first and client.requests == 1  # from the cache
        changed = ModelChanged(db_config_id="c", provider="openai", model_id="gpt-x", change="updated")
        await model_api.publish(changed.subject, changed.to_bytes(), headers=changed.headers())
        await sync_with_server(model_api)
        for _ in range(500):
            if client.cached("openai", "gpt-x") is None:
                break
            await asyncio.sleep(0.01)
        second = await client.get("openai", "gpt-x")
        assert client.requests == 2 and second is not None and second != first
        # an activation in the console: the agent forgets its entries and asks the active catalogue
        await model_api.publish(subjects.DBCONFIG_ACTIVATED, b'{"db_type": "dynamodb"}')
        await sync_with_server(model_api)
        for _ in range(500):
            if client.cached("openai", "gpt-x") is None:
                break
            await asyncio.sleep(0.01)
        third = await client.get("openai", "gpt-x")
        assert client.requests == 3 and third is not None and third != second
    finally:
        await client.close()
        await agent.close()
    assert session.violations("planner") == []
