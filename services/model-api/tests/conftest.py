"""model-api running against a real PostgreSQL database and the real NATS server, driven over ASGI or a socket."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx
import pytest
import uvicorn
from fastapi import FastAPI

from stockade.identity import create_user, grant_platform_admin
from stockade.model_api.main import create_app
from stockade.model_api.settings import ModelApiSettings, SessionSettings, SignInSettings
from stockade.runtime.settings import DatabaseSettings, HttpSettings, NatsSettings

PASSWORD = "correct horse battery staple"


@dataclass
class Console:
    app: FastAPI
    settings: ModelApiSettings
    email: str
    password: str = PASSWORD

    @property
    def sessions(self):
        return self.app.state.service.sessions

    async def add_user(self, email: str, password: str = PASSWORD) -> None:
        async with self.sessions() as s:
            await create_user(s, email, password)
            await s.commit()

    async def make_platform_admin(self, email: str | None = None) -> None:
        async with self.sessions() as s:
            await grant_platform_admin(s, email or self.email)
            await s.commit()


def make_settings(db_url: str, nats_url: str, port: int = 0, **extra) -> ModelApiSettings:
    # Tests talk plain http: a Secure cookie (the default, "always") would not come back from httpx; "auto"
    # still sets it on https requests.
    extra.setdefault("session", SessionSettings(secure="auto"))
    return ModelApiSettings(
        db=DatabaseSettings(url=db_url),
        nats=NatsSettings(url=nats_url),
        http=HttpSettings(port=port),
        sign_in=SignInSettings(max_failures_per_email=3, max_failures_per_client=50),
        **extra,
    )


@pytest.fixture
async def console(postgres_database, nats_url, unique_name) -> AsyncIterator[Console]:
    """The app with its lifespan running (migrations, NATS) and one user with a password."""
    settings = make_settings(postgres_database, nats_url)
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        env = Console(app, settings, f"{unique_name('user')}@example.org")
        await env.add_user(env.email)
        yield env


@pytest.fixture
async def anonymous(console) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=console.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        yield client


async def sign_in(client: httpx.AsyncClient, email: str, password: str = PASSWORD) -> httpx.Response:
    return await client.post("/login", data={"email": email, "password": password, "next": "/models"})


@pytest.fixture
async def client(console, anonymous) -> httpx.AsyncClient:
    """A client holding a live session cookie."""
    response = await sign_in(anonymous, console.email)
    assert response.status_code == 303, response.text
    anonymous.headers["X-CSRF-Token"] = (await anonymous.get("/api/platform/session")).json()["csrfToken"]
    return anonymous


@dataclass
class Served:
    base_url: str
    console: Console


@pytest.fixture
async def served(postgres_database, nats_url, unused_tcp_port, unique_name) -> AsyncIterator[Served]:
    """model-api on a real socket (uvicorn), for the socket test and the browser tests."""
    settings = make_settings(postgres_database, nats_url, unused_tcp_port)
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
        env = Console(app, settings, f"{unique_name('user')}@example.org")
        await env.add_user(env.email)
        yield Served(f"http://127.0.0.1:{unused_tcp_port}", env)
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, timeout=30)


@pytest.fixture
def login():
    """``await login(client, email, password=PASSWORD)``: post the sign-in form."""
    return sign_in


@pytest.fixture
def settings_for():
    """``settings_for(db_url, nats_url, port=0)``: test settings (3 failed sign-ins per e-mail allowed)."""
    return make_settings
