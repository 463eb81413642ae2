"""The real prompt-api under uvicorn (own thread, real socket) on a real PostgreSQL, NATS for its events.

Identity is seeded with the stockade.identity service functions, as prompt-api's own tests do.
"""

import asyncio
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import httpx
import pytest
import uvicorn

from stockade import identity
from stockade.identity.directory import find_user
from stockade.prompt_api.main import create_app
from stockade.prompt_api.migrate import upgrade
from stockade.prompt_api.settings import LimitSettings, OutboxSettings, PromptApiSettings
from stockade.runtime.db import create_engine, session_factory
from stockade.runtime.settings import DatabaseSettings, HttpSettings, NatsSettings
from stockade.testing.ports import free_port


class ServedApp:
    """create_app(settings) served by uvicorn in a thread with its own event loop (sync clients may block)."""

    def __init__(self, settings: PromptApiSettings) -> None:
        self.port = settings.http.port
        self.base_url = f"http://127.0.0.1:{self.port}"
        app = create_app(settings)
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_config=None, access_log=False)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name=f"prompt-api-{self.port}", daemon=True)

    def start(self) -> None:
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            assert self._thread.is_alive(), "prompt-api did not start (see the log)"
            assert time.monotonic() < deadline, "prompt-api did not start within 30 s"
            time.sleep(0.02)

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(20)
        assert not self._thread.is_alive()


@dataclass
class World:
    base_url: str
    server: ServedApp
    db_url: str
    org_id: str
    project_id: str  # direct flow; alice is a member
    foreign_project_id: str  # another organisation
    write_key: str  # alice, write scope
    read_key: str  # alice, read scope
    carol_key: str  # carol: organisation member, no project
    revoked_key: str
    requests: list[httpx.Request] = field(default_factory=list)
    responses: list[httpx.Response] = field(default_factory=list)

    def http(self) -> httpx.Client:
        """An httpx client to pass to StockadeClient that records every request and response."""
        return httpx.Client(
            base_url=self.base_url,
            timeout=5,
            event_hooks={"request": [self.requests.append], "response": [self.responses.append]},
        )

    def async_http(self) -> httpx.AsyncClient:
        async def on_request(r):
            self.requests.append(r)

        async def on_response(r):
            self.responses.append(r)

        return httpx.AsyncClient(
            base_url=self.base_url,
            timeout=5,
            event_hooks={"request": [on_request], "response": [on_response]},
        )


async def _seed(db_url: str) -> dict[str, str]:
    engine = create_engine(db_url)
    try:
        async with session_factory(engine)() as s:
            org = await identity.create_organisation(s, "acme")
            other = await identity.create_organisation(s, "other")
            alice = await identity.create_user(s, "alice@example.com")
            carol = await identity.create_user(s, "carol@example.com")
            project = await identity.create_project(s, org.id, "agents")
            foreign = await identity.create_project(s, other.id, "foreign")
            await identity.add_project_member(s, project.id, alice.id)
            await identity.add_organisation_member(s, org.id, carol.id)
            write = await identity.create_api_key(s, alice.id, scope="write")
            read = await identity.create_api_key(s, alice.id, scope="read")
            carols = await identity.create_api_key(s, carol.id, scope="write")
            revoked = await identity.create_api_key(s, alice.id, scope="write")
            await identity.revoke_api_key(s, revoked.id)
            await s.commit()
    finally:
        await engine.dispose()
    return {
        "org_id": org.id,
        "project_id": project.id,
        "foreign_project_id": foreign.id,
        "write_key": write.key,
        "read_key": read.key,
        "carol_key": carols.key,
        "revoked_key": revoked.key,
    }


@pytest.fixture
async def world(postgres_database, nats_url) -> Iterator[World]:
    """A migrated PostgreSQL database, seeded identity, and prompt-api serving it with the outbox relay on."""
    await asyncio.to_thread(upgrade, postgres_database)
    seeded = await _seed(postgres_database)
    settings = PromptApiSettings(
        db=DatabaseSettings(url=postgres_database),
        nats=NatsSettings(url=nats_url, connect_timeout_s=1),
        http=HttpSettings(port=free_port()),
        deployment="onprem",
        migrate_on_startup=False,
        limits=LimitSettings(max_body_bytes=64 * 1024),  # small, so the 413 test sends little
        outbox=OutboxSettings(enabled=True, interval_s=0.2),
    )
    server = ServedApp(settings)
    await asyncio.to_thread(server.start)
    try:
        yield World(server.base_url, server, postgres_database, **seeded)
    finally:
        await asyncio.to_thread(server.stop)


@dataclass
class ReviewProject:
    project_id: str  # Manual review, in the world's organisation
    proposer_key: str  # alice, write scope, member without the approver tag
    approver_key: str  # bob, write scope, member with the approver tag


@pytest.fixture
async def review_project(world: World) -> ReviewProject:
    """A Manual review project next to the world's (the world's own seed is left as it is)."""
    engine = create_engine(world.db_url)
    try:
        async with session_factory(engine)() as s:
            project = await identity.create_project(s, world.org_id, "reviewed", flow="manual-review")
            bob = await identity.create_user(s, "bob@example.com")
            alice = await find_user(s, "alice@example.com")
            for user_id in (alice.id, bob.id):  # members as alice is of the world's project
                await identity.add_project_member(s, project.id, user_id)
            await identity.grant_tag(s, project.id, bob.id)
            proposer = await identity.create_api_key(s, alice.id, scope="write")
            approver = await identity.create_api_key(s, bob.id, scope="write")
            await s.commit()
    finally:
        await engine.dispose()
    return ReviewProject(project.id, proposer.key, approver.key)
