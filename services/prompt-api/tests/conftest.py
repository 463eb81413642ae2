"""Shared fixtures: a migrated database of each kind, a running app (lifespan included), and a small world."""

import concurrent.futures
import shutil
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from stockade import identity
from stockade.prompt_api.main import create_app
from stockade.prompt_api.migrate import upgrade
from stockade.prompt_api.settings import OutboxSettings, PromptApiSettings
from stockade.runtime.db import create_engine, session_factory
from stockade.runtime.settings import DatabaseSettings, NatsSettings
from stockade.testing.asyncbridge import run_blocking
from stockade.testing.names import make_unique_name
from stockade.testing.postgres import to_asyncpg_url


def _in_thread(fn, *args):
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(fn, *args).result(timeout=120)


async def _pg_execute(admin_url: str, sql: str) -> None:
    conn = await asyncpg.connect(admin_url, timeout=10)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory) -> Path:
    """Migrated once per run; each test gets a copy (same schema, same migrations, much faster)."""
    path = tmp_path_factory.mktemp("tmpl") / "template.db"
    _in_thread(upgrade, f"sqlite+aiosqlite:///{path}")
    return path


@pytest.fixture(scope="session")
def postgres_template(postgres_url) -> Iterator[str]:
    """A real PostgreSQL database migrated once per run; tests get ``CREATE DATABASE ... TEMPLATE`` copies."""
    name = make_unique_name("tmpl_prompt_api")
    run_blocking(lambda: _pg_execute(postgres_url, f'CREATE DATABASE "{name}"'))
    try:
        _in_thread(upgrade, to_asyncpg_url(postgres_url, name))
        yield name
    finally:
        run_blocking(lambda: _pg_execute(postgres_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request, tmp_path) -> Iterator[str]:
    """A fresh, migrated database of each kind: a SQLite file and a real PostgreSQL database."""
    if request.param == "sqlite":
        target = tmp_path / "prompt-api.db"
        shutil.copy(request.getfixturevalue("sqlite_template"), target)
        yield f"sqlite+aiosqlite:///{target}"
        return
    admin = request.getfixturevalue("postgres_url")
    template = request.getfixturevalue("postgres_template")
    name = make_unique_name("test_prompt_api")
    run_blocking(lambda: _pg_execute(admin, f'CREATE DATABASE "{name}" TEMPLATE "{template}"'))
    try:
        yield to_asyncpg_url(admin, name)
    finally:
        run_blocking(lambda: _pg_execute(admin, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture
async def sessions(db_url) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    engine = create_engine(db_url)
    try:
        yield session_factory(engine)
    finally:
        await engine.dispose()


def make_settings(db_url: str, nats_url: str = "nats://127.0.0.1:1", **kw) -> PromptApiSettings:
    return PromptApiSettings(
        db=DatabaseSettings(url=db_url),
        nats=NatsSettings(url=nats_url, connect_timeout_s=0.5),
        outbox=kw.pop("outbox", OutboxSettings(enabled=False)),  # the outbox tests turn the relay on
        migrate_on_startup=False,
        gc_freeze=kw.pop("gc_freeze", False),  # a test process builds many apps: nothing to freeze for
        **kw,
    )


@pytest.fixture
async def app_factory(sessions, db_url):
    """Build and start apps (lifespan run) with settings overrides; yields httpx clients over ASGI."""
    stack = []

    async def make(**kw) -> httpx.AsyncClient:
        app = create_app(make_settings(db_url, **kw))
        ctx = app.router.lifespan_context(app)
        await ctx.__aenter__()
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://prompt-api")
        stack.append((ctx, client))
        client.app = app  # for tests that look at app.state
        return client

    yield make
    for ctx, client in reversed(stack):
        await client.aclose()
        await ctx.__aexit__(None, None, None)


@pytest.fixture
async def client(app_factory) -> httpx.AsyncClient:
    return await app_factory()


@dataclass
class World:
    org: identity.OrganisationPublic
    direct: identity.ProjectPublic
    review: identity.ProjectPublic
    foreign: identity.ProjectPublic
    alice: identity.UserPublic  # member of direct and review (approver on neither at first)
    carol: identity.UserPublic  # organisation member, no project
    write_key: str
    read_key: str
    legacy_key: str
    hosted_key: str
    carol_key: str
    write_key_id: str


@pytest.fixture
async def world(sessions) -> World:
    async with sessions() as s:
        org = await identity.create_organisation(s, "acme")
        other = await identity.create_organisation(s, "other")
        alice = await identity.create_user(s, "alice@example.com")
        carol = await identity.create_user(s, "carol@example.com")
        direct = await identity.create_project(s, org.id, "direct")
        review = await identity.create_project(s, org.id, "review", "manual-review")
        foreign = await identity.create_project(s, other.id, "foreign")
        await identity.add_project_member(s, direct.id, alice.id)
        await identity.add_project_member(s, review.id, alice.id)
        await identity.add_organisation_member(s, org.id, carol.id)
        write = await identity.create_api_key(s, alice.id, scope="write")
        read = await identity.create_api_key(s, alice.id, scope="read")
        legacy = await identity.create_api_key(s, alice.id, legacy=True)
        hosted = await identity.create_api_key(s, alice.id, deployment="hosted")
        carols = await identity.create_api_key(s, carol.id, scope="write")
        await s.commit()
    return World(
        org,
        direct,
        review,
        foreign,
        alice,
        carol,
        write.key,
        read.key,
        legacy.key,
        hosted.key,
        carols.key,
        write.id,
    )


@pytest.fixture
def console_credential(sessions):
    """``await console_credential(user_id, now=None, deployment=ONPREM)``: a new console session of the user and
    its prompt-api credential (``stockade.identity.session_keys``); ``now`` in the past makes an expired one."""
    from datetime import timedelta

    from stockade.identity.session_keys import session_credential
    from stockade.identity.sessions import start_session
    from stockade.identity.tables import Deployment

    async def make(user_id: str, now=None, deployment=Deployment.ONPREM) -> tuple[Any, str]:
        async with sessions() as s:
            started = await start_session(s, user_id, timedelta(hours=12))
            key = await session_credential(
                s,
                console_session_id=started.session_id,
                user_id=user_id,
                session_token=started.token,
                session_expires_at=started.expires_at,
                deployment=deployment,
                now=now,
            )
        return started, key

    return make


@pytest.fixture
def settings_for():
    """``settings_for(db_url, **overrides)`` -> PromptApiSettings for an app under test."""
    return make_settings


SAMPLE_PNG = bytes(range(256))
SAMPLE_SKILL_MD = """---
name: incident-response
description: Handle production incidents step by step.
license: Apache-2.0
metadata:
  owner: sre
allowed-tools: [Bash, Read]
---
# Incident response

Read references/severity.md first, then run scripts/page.sh.
"""


@pytest.fixture
def sample_skill():
    """(body builder, SKILL.md, PNG bytes) of a skill with references, scripts, assets and a nested file."""
    import base64

    def body(project_id, md=SAMPLE_SKILL_MD, name="incident-response", files=None, **extra):
        if files is None:
            files = {
                "references/severity.md": "# Severity\nSEV1 is bad.\n",
                "scripts/page.sh": "#!/bin/sh\necho paging\n",
                "assets/diagram.png": {"base64": base64.b64encode(SAMPLE_PNG).decode()},
                "docs/deep/notes.txt": "nested file",
            }
        return {"project_id": project_id, "skill_name": name, "skill_md": md, "files": files, **extra}

    return body, SAMPLE_SKILL_MD, SAMPLE_PNG
