"""Guardrail runs stored the way guardrail-ingest stores them, for the console's run pages.

The events go through guardrail-ingest's own code: the wire model (``GuardrailBatch``), its ``to_records`` and
its ClickHouse sink (which creates the table), into a real ClickHouse (chdb or ``CLICKHOUSE_URL``). Nothing of
the table is copied here. (A test-only import of the other service: the app itself never imports it.)
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
import uvicorn

from stockade.contracts.nats_sync import sync_with_server
from stockade.guardrail_ingest.records import to_records
from stockade.guardrail_ingest.run_reads import RunReads
from stockade.guardrail_ingest.sinks.clickhouse import ClickHouseSink
from stockade.guardrail_ingest.sinks.dynamodb import DynamoSink
from stockade.guardrail_ingest.sinks.mongodb import MongoSink
from stockade.guardrail_ingest.sinks.router import FixedStore
from stockade.guardrails.storage.wire import GuardrailBatch
from stockade.model_api.main import create_app
from stockade.model_api.settings import RunStoreSettings

NOW = datetime.now(UTC).replace(microsecond=0)
BULK_RUNS = 57  # more than one page of 25


def _event(run: str, n: int, at: datetime, kind: str, name: str, action: str | None, **payload: Any) -> dict:
    return {
        "event_id": f"{run}-{n}",
        "kind": kind,
        "name": name,
        "occurred_at": at.isoformat(),
        "session_id": f"sess-{run}",
        "action": action,
        "payload": payload,
    }


def _check(
    run: str, n: int, at: datetime, name: str, action: str, ms: float, score: float, stage: str, **types
):
    return _event(
        run,
        n,
        at,
        "check",
        name,
        action,
        stage=stage,
        duration_ms=ms,
        score=score,
        finding_types=types,
        error=None,
    )


def sample_batches() -> list[dict]:
    """A masked-and-blocked run, a clean run, a trust rejection, many bulk runs, and one run 30 days back."""
    t = NOW - timedelta(hours=2)
    masked = [
        _check("run-masked", 1, t, "pii", "mask", 21.5, 0.93, "input", PERSON=1, EMAIL_ADDRESS=2),
        _event(
            "run-masked",
            2,
            t,
            "pii_audit",
            "pii",
            "mask",
            entity_type="EMAIL_ADDRESS",
            score=0.99,
            stage="input",
        ),
        _check("run-masked", 3, t + timedelta(milliseconds=30), "toxicity", "allow", 48.0, 0.02, "input"),
        _event(
            "run-masked",
            4,
            t + timedelta(milliseconds=900),
            "generate",
            "generate",
            "block",
            reason="output blocked",
        ),
        _check(
            "run-masked",
            5,
            t + timedelta(milliseconds=950),
            "exfiltration",
            "block",
            3.25,
            0.97,
            "output",
            SECRET=1,
        ),
    ]
    # the agent ran platform policy support v1, then v2 (published mid-run) made the exfiltration block
    masked = [{**e, "policy_name": "support", "policy_version": "1"} for e in masked[:4]] + [
        {**masked[4], "policy_name": "support", "policy_version": "2"}
    ]
    clean = [
        _check("run-clean", 1, t + timedelta(minutes=5), "pii", "allow", 12.0, 0.0, "input"),
        _check("run-clean", 2, t + timedelta(minutes=5, seconds=1), "toxicity", "allow", 40.0, 0.01, "input"),
    ]
    trust = [
        _event(
            "run-trust",
            1,
            t + timedelta(minutes=10),
            "trust",
            "verify_message",
            "block",
            layer="A",
            reason="sender trust level restricted is below the floor trusted",
            sender="crawler",
            capability=None,
        )
    ]
    batches = [
        {
            "run": {
                "run_id": "run-masked",
                "project_id": "shop",
                "agent_id": "support-bot",
                "environment": "prod",
                "prompt_name": "greeting",
                "prompt_version": "2",
                "labels": {"team": "care"},
            },
            "events": masked,
        },
        {"run": {"run_id": "run-clean", "project_id": "shop", "agent_id": "support-bot"}, "events": clean},
        {"run": {"run_id": "run-trust", "project_id": "bank", "agent_id": "ledger"}, "events": trust},
        {
            "run": {"run_id": "run-old", "project_id": "shop", "agent_id": "support-bot"},
            "events": [
                _check("run-old", 1, NOW - timedelta(days=30), "pii", "block", 9.0, 0.9, "input", PERSON=1)
            ],
        },
    ]
    for i in range(BULK_RUNS):
        at = NOW - timedelta(hours=3, minutes=i)
        action = "mask" if i % 3 == 0 else "allow"
        batches.append(
            {
                "run": {"run_id": f"bulk-{i:03d}", "project_id": "bulk", "agent_id": "batcher"},
                "events": [
                    _check(
                        f"bulk-{i:03d}",
                        1,
                        at,
                        "pii",
                        action,
                        10.0 + i,
                        0.5,
                        "input",
                        **({"PERSON": 1} if action == "mask" else {}),
                    )
                ],
            }
        )
    return batches


async def store_batches(dsn: str, table: str, batches: list[dict]) -> None:
    sink = ClickHouseSink(dsn, table)
    try:
        await sink.ensure_schema()
        for body in batches:
            await sink.write(to_records(GuardrailBatch.model_validate(body)))
    finally:
        await sink.aclose()


@pytest.fixture
async def stored_runs(clickhouse_dsn, clickhouse_client, unique_name) -> str:
    """A fresh table holding :func:`sample_batches`; returns its name."""
    table = unique_name("guardrail_events")
    batches = sample_batches()
    await store_batches(clickhouse_dsn, table, batches)
    stored = clickhouse_client.query(f"SELECT count() FROM {table}").result_rows[0][0]
    assert stored == sum(len(b["events"]) for b in batches)
    return table


def _settings(settings_for, postgres_database, nats_url, port=0):
    return settings_for(postgres_database, nats_url, port, runs=RunStoreSettings(page_size=25))


@asynccontextmanager
async def ingest_reads(sink: Any, nats_url: str, reply_bytes: int | None = None) -> AsyncIterator[None]:
    """guardrail-ingest's answers to guardrail.cmd.read_runs.v2 from ``sink``'s store (its own responder and
    readers, on a broker as the service declares it). ``reply_bytes``: smaller replies than a NATS message, so
    that long runs and exports come in several."""
    from stockade.runtime.bus import connect_broker, make_broker, stop_broker
    from stockade.runtime.settings import NatsSettings

    settings = NatsSettings(url=nats_url, startup_wait_s=5)
    broker = make_broker(settings, name="guardrail-ingest")
    nc = await connect_broker(broker, settings)
    RunReads(FixedStore(sink), lambda: sink.kind, reply_bytes=reply_bytes).declare(
        broker, lambda: nc.max_payload
    )
    await broker.start()
    await sync_with_server(nc)
    try:
        yield
    finally:
        await stop_broker(broker, settings.drain_timeout_s)


@dataclass
class RunsConsole:
    app: Any
    email: str
    table: str


@pytest.fixture(
    params=[
        pytest.param("clickhouse", marks=[pytest.mark.clickhouse, pytest.mark.nats]),
        pytest.param("mongodb", marks=[pytest.mark.mongo, pytest.mark.nats]),
        pytest.param("dynamodb", marks=[pytest.mark.dynamodb, pytest.mark.nats]),
    ]
)
async def runs_client(
    request, settings_for, login, postgres_database, nats_url, unique_name
) -> AsyncIterator[httpx.AsyncClient]:
    """A signed-in client of a console whose run store (ClickHouse, MongoDB or DynamoDB) holds
    :func:`sample_batches`, stored by guardrail-ingest's sink for that store and read through guardrail-ingest's
    typed commands over NATS (as in every deployment), in replies of at most 16 KiB so that long answers come
    in several."""
    name = unique_name("guardrail_events")
    sink = await _stored_sink(request, name)
    try:
        async with ingest_reads(sink, nats_url, reply_bytes=16384):
            runs = RunStoreSettings(page_size=25, export_page=7)  # exports come in many pages
            settings = settings_for(postgres_database, nats_url, 0, runs=runs)
            async for client in _signed_in(request, settings, login, unique_name):
                yield client
    finally:
        await sink.aclose()


async def _stored_sink(request, name: str) -> Any:
    """The sink of the fixture's store kind, holding :func:`sample_batches` in table ``name``."""
    if request.param == "clickhouse":
        sink: Any = ClickHouseSink(request.getfixturevalue("clickhouse_dsn"), name)
    elif request.param == "mongodb":
        sink = MongoSink(request.getfixturevalue("mongodb_url"), name)
    else:
        monkeypatch = request.getfixturevalue("monkeypatch")
        for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
            monkeypatch.setenv(var, "testing")
        sink = DynamoSink(request.getfixturevalue("dynamodb_endpoint"), name, region="us-east-1")
    await sink.ensure_schema()
    for body in sample_batches():
        await sink.write(to_records(GuardrailBatch.model_validate(body)))
    return sink


SAMPLE_PROJECTS = ("shop", "bank", "bulk")


async def member_of_sample_projects(sessions, email: str, projects=SAMPLE_PROJECTS) -> None:
    """Projects whose ids are those of :func:`sample_batches` (an organisation of their own), with ``email`` a
    member of ``projects``: the run pages show only the signed-in user's projects."""
    from stockade import identity
    from stockade.identity.tables import Project

    async with sessions() as s:
        org = await identity.create_organisation(s, f"runs-{email}")
        for pid in SAMPLE_PROJECTS:
            s.add(Project(id=pid, organisation_id=org.id, name=pid))
        await s.commit()
        for pid in projects:
            await identity.add_project_member(s, pid, email)
        await s.commit()


async def _signed_in(request, settings, login, unique_name) -> AsyncIterator[httpx.AsyncClient]:
    from stockade.identity import create_user, grant_platform_admin

    app = create_app(settings)
    async with app.router.lifespan_context(app):
        email = f"{unique_name('user')}@example.org"
        async with app.state.service.sessions() as s:
            await create_user(s, email, "correct horse battery staple")
            await grant_platform_admin(s, email)  # to activate the store under test
            await s.commit()
        await member_of_sample_projects(app.state.service.sessions, email)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            assert (await login(client, email)).status_code == 303
            token = (await client.get("/api/platform/session")).json()["csrfToken"]
            client.headers["X-CSRF-Token"] = token
            if request.param != "clickhouse":  # the page header names the active configuration's store
                form = {"csrf_token": token, "name": "events", "db_type": request.param, "activate": "1"}
                assert (await client.post("/db-configs", data=form)).status_code == 303
            yield client


@dataclass
class ServedRuns:
    base_url: str
    email: str
    password: str = "correct horse battery staple"
    app: Any = None


@pytest.fixture
async def served_runs(
    stored_runs, settings_for, postgres_database, nats_url, clickhouse_dsn, unused_tcp_port, unique_name
) -> AsyncIterator[ServedRuns]:
    """The console on a real socket (uvicorn) reading :func:`stored_runs`, for the browser tests."""
    from stockade.identity import create_user

    settings = _settings(settings_for, postgres_database, nats_url, unused_tcp_port)
    sink = ClickHouseSink(clickhouse_dsn, stored_runs)
    reads = ingest_reads(sink, nats_url)
    await reads.__aenter__()
    app = create_app(settings)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=unused_tcp_port, log_config=None))
    task = asyncio.create_task(server.serve())
    try:
        for _ in range(400):
            if server.started:
                break
            if task.done():
                task.result()
            await asyncio.sleep(0.05)
        email = f"{unique_name('user')}@example.org"
        async with app.state.service.sessions() as s:
            await create_user(s, email, "correct horse battery staple")
            await s.commit()
        await member_of_sample_projects(app.state.service.sessions, email)
        yield ServedRuns(f"http://127.0.0.1:{unused_tcp_port}", email, app=app)
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, timeout=30)
        await reads.__aexit__(None, None, None)
        await sink.aclose()


# --- prompts and skills: prompt-api and the console, both on real sockets, one PostgreSQL database ------------
SKILL_MD = """---
name: refund-policy
description: {description}
allowed-tools: [Read]
---
# Refunds

{body}
"""


@asynccontextmanager
async def serve(app: Any, port: int) -> AsyncIterator[str]:
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None))
    task = asyncio.create_task(server.serve())
    try:
        for _ in range(400):
            if server.started:
                break
            if task.done():
                task.result()
            await asyncio.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, timeout=30)


@dataclass
class PromptWorld:
    """The console (``base_url``) and prompt-api (``prompt_api``) over one database.

    Projects: ``shop`` (direct flow: prompt ``greeting`` v1, v2; skill ``refund-policy`` v1, v2) and ``legal``
    (Manual review: prompt ``terms`` v1 and skill ``refund-policy`` v1, with two pending prompt proposals and one
    pending skill proposal by ``author``). ``reviewer`` is a member of
    both and holds the approver tag on ``legal``; ``author`` is a member of ``legal`` only, without the tag.
    Everyone signs in with the same password; each has a write key.
    """

    base_url: str
    prompt_api: str
    shop: str
    legal: str
    reviewer: str
    author: str
    outsider: str
    keys: dict[str, str]
    password: str = "correct horse battery staple"


@pytest.fixture
async def prompt_world(
    settings_for, postgres_database, nats_url, unused_tcp_port_factory, unique_name
) -> AsyncIterator[PromptWorld]:
    from stockade import identity
    from stockade.model_api.settings import PromptApiLink
    from stockade.prompt_api.main import create_app as create_prompt_api
    from stockade.prompt_api.settings import PromptApiSettings
    from stockade.runtime.settings import DatabaseSettings, HttpSettings, NatsSettings

    prompt_port, console_port = unused_tcp_port_factory(), unused_tcp_port_factory()
    prompt_app = create_prompt_api(
        PromptApiSettings(
            db=DatabaseSettings(url=postgres_database),
            nats=NatsSettings(url=nats_url),
            http=HttpSettings(port=prompt_port),
            gc_freeze=False,
        ),
    )
    async with serve(prompt_app, prompt_port) as prompt_url:
        console_app = create_app(
            settings_for(postgres_database, nats_url, console_port, prompt_api=PromptApiLink(url=prompt_url))
        )
        async with serve(console_app, console_port) as base_url:
            emails = {who: f"{unique_name(who)}@example.org" for who in ("reviewer", "author", "outsider")}
            async with console_app.state.service.sessions() as s:
                org = await identity.create_organisation(s, unique_name("acme"))
                shop = await identity.create_project(s, org.id, "shop")
                legal = await identity.create_project(s, org.id, "legal", "manual-review")
                users = {w: await identity.create_user(s, e, PromptWorld.password) for w, e in emails.items()}
                for project in (shop, legal):
                    await identity.add_project_member(s, project.id, users["reviewer"].id)
                await identity.add_project_member(s, legal.id, users["author"].id)
                await identity.add_organisation_member(s, org.id, users["outsider"].id)
                await identity.grant_tag(s, legal.id, users["reviewer"].id)
                keys = {
                    w: (await identity.create_api_key(s, u.id, scope="write")).key for w, u in users.items()
                }
                await s.commit()
            async with httpx.AsyncClient(base_url=prompt_url) as api:

                async def post(who: str, path: str, body: dict) -> dict:
                    answer = await api.post(path, json=body, headers={"X-API-Key": keys[who]})
                    assert answer.status_code in (200, 201), answer.text
                    return answer.json()

                publish = "/prompts/active-prompt-version"
                greeting = {"project_id": shop.id, "prompt_name": "greeting"}
                await post(
                    "reviewer",
                    publish,
                    {**greeting, "content": "Hello!\nHow can I help?", "commit_message": "first"},
                )
                await post(
                    "reviewer",
                    publish,
                    {
                        **greeting,
                        "content": "Hello <b>friend</b>!\nHow can I help you today?",
                        "config": {"temperature": 0.2},
                        "commit_message": "warmer greeting",
                    },
                )
                for n, text in enumerate(
                    ("Refund within 30 days.", "Refund within 60 days.\nAsk for the order id."), 1
                ):
                    md = SKILL_MD.format(description=f"How to handle refunds (v{n}).", body=text)
                    await post(
                        "reviewer",
                        "/skills/active-version",
                        {
                            "project_id": shop.id,
                            "skill_name": "refund-policy",
                            "skill_md": md,
                            "commit_message": f"v{n}",
                        },
                    )
                terms = {"project_id": legal.id, "prompt_name": "terms", "content": "Terms: be polite."}
                await post("reviewer", publish, terms)
                await post(
                    "author",
                    "/prompts/terms/proposals",
                    {
                        "project_id": legal.id,
                        "content": "Terms: be polite and brief.",
                        "commit_message": "shorter answers",
                    },
                )
                await post(
                    "author",
                    "/prompts/terms/proposals",
                    {"project_id": legal.id, "content": "Terms: shout.", "commit_message": "louder"},
                )
                await post(
                    "reviewer",
                    "/skills/active-version",
                    {
                        "project_id": legal.id,
                        "skill_name": "refund-policy",
                        "skill_md": SKILL_MD.format(description="Refunds, legal.", body="Refund in 14 days."),
                        "files": {"references/policy.md": "# Policy\n", "old.txt": "old\n"},
                    },
                )
                await post(
                    "author",
                    "/skills/refund-policy/proposals",
                    {
                        "project_id": legal.id,
                        "skill_md": SKILL_MD.format(description="Refunds, legal.", body="Refund in 30 days."),
                        "files": {"references/policy.md": "# Policy v2\n", "notes.txt": "new\n"},
                        "commit_message": "longer refunds",
                    },
                )
            yield PromptWorld(
                base_url,
                prompt_url,
                shop.id,
                legal.id,
                emails["reviewer"],
                emails["author"],
                emails["outsider"],
                keys,
            )
