"""Shared fixtures: a migrated database of each kind, a running app (lifespan included), and a small world."""

from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from stockade import identity
from stockade.prompt_api.main import create_app
from stockade.prompt_api.migrate import upgrade_async
from stockade.prompt_api.settings import OutboxSettings, PromptApiSettings
from stockade.runtime import DatabaseSettings, NatsSettings, create_engine, session_factory


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request, tmp_path) -> str:
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path}/prompt-api.db"
    return request.getfixturevalue("postgres_database")


@pytest.fixture
async def sessions(db_url) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    await upgrade_async(db_url)
    engine = create_engine(db_url)
    try:
        yield session_factory(engine)
    finally:
        await engine.dispose()


def make_settings(db_url: str, nats_url: str = "nats://127.0.0.1:1", **kw) -> PromptApiSettings:
    return PromptApiSettings(
        db=DatabaseSettings(url=db_url),
        nats=NatsSettings(url=nats_url, connect_timeout_s=0.5),
        outbox=kw.pop("outbox", OutboxSettings(interval_s=0.2)),
        migrate_on_startup=False,
        **kw,
    )


@pytest.fixture
async def app_factory(sessions, db_url):
    """Build and start apps (lifespan run) with settings overrides; yields httpx clients over ASGI."""
    stack = []

    async def make(**kw) -> httpx.AsyncClient:
        app = create_app(make_settings(db_url, **kw), configure_logs=False)
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
