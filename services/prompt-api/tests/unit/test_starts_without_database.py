"""The service starts while PostgreSQL is unreachable (nothing connects until a request needs the database)."""

import httpx

from stockade.prompt_api.main import create_app
from stockade.prompt_api.settings import OutboxSettings, PromptApiSettings


async def test_app_starts_and_answers_healthz_with_postgres_down():
    settings = PromptApiSettings(
        db={"url": "postgresql+asyncpg://nobody@127.0.0.1:1/none"},  # port 1: nothing listens
        migrate_on_startup=False,
        outbox=OutboxSettings(enabled=False),
    )
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://prompt-api") as client:
            assert (await client.get("/healthz")).status_code == 200
            r = await client.get("/prompts/active-prompt-version", params={"api_key": "x", "project_id": "p"})
            assert r.status_code == 500  # the database is down: an error, not a 404 that would hide it
