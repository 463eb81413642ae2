"""The in-process cache: a second read is a 304 on the wire; the last good copy when the server is gone."""

import logging

import asyncpg
import pytest
from sqlalchemy.engine import make_url

from stockade.client import (
    AsyncStockadeClient,
    ClientSettings,
    RetrySettings,
    ServerUnavailableError,
    StockadeClient,
)

pytestmark = [pytest.mark.postgres, pytest.mark.nats]

READ_PATH = "/prompts/active-prompt-version"
FAST_RETRY = ClientSettings(retry=RetrySettings(attempts=3, backoff_s=0.01))


def _reads(world):
    return [r for r in world.responses if r.request.method == "GET" and r.request.url.path == READ_PATH]


def test_the_second_read_is_revalidated_with_a_304(world):
    with StockadeClient(world.write_key, http_client=world.http()) as client:
        client.publish_prompt(world.project_id, "cached", "v1 text")
        first = client.get_prompt(world.project_id, "cached")
        second = client.get_prompt(world.project_id, "cached")
        assert second == first
        reads = _reads(world)
        assert [r.status_code for r in reads] == [200, 304]
        assert reads[1].request.headers["If-None-Match"] == reads[0].headers["ETag"]

        client.publish_prompt(world.project_id, "cached", "v2 text")
        third = client.get_prompt(world.project_id, "cached")
        assert (third.version, third.content) == (2, "v2 text")
        assert [r.status_code for r in _reads(world)] == [200, 304, 200]


async def test_async_client_revalidates_too(world):
    async with AsyncStockadeClient(world.write_key, http_client=world.async_http()) as client:
        await client.publish_prompt(world.project_id, "cached-async", "text")
        assert await client.get_prompt(world.project_id, "cached-async") == await client.get_prompt(
            world.project_id, "cached-async"
        )
    assert [r.status_code for r in _reads(world)] == [200, 304]


def test_last_good_copy_when_the_server_is_stopped(world, caplog):
    caplog.set_level(logging.DEBUG)
    p = world.project_id
    with StockadeClient(world.write_key, FAST_RETRY, http_client=world.http()) as client:
        client.publish_prompt(p, "resilient", "keep serving me")
        good = client.get_prompt(p, "resilient")
        skills_before = client.list_skills(p)
        world.server.stop()
        world.requests.clear()
        caplog.clear()

        assert client.get_prompt(p, "resilient") == good
        assert len(world.requests) == 3, "a read is retried after transport errors (3 attempts)"
        warnings = [r for r in caplog.records if r.name == "stockade.client" and r.levelno == logging.WARNING]
        assert len(warnings) == 1
        message = warnings[0].getMessage()
        assert "unreachable" in message and "last good copy" in message and "resilient" in message
        assert client.list_skills(p) == skills_before  # any cached read, not only prompts

        with pytest.raises(ServerUnavailableError, match="unreachable"):
            client.get_prompt(p, "never-read-before")
        world.requests.clear()
        with pytest.raises(ServerUnavailableError):
            client.publish_prompt(p, "resilient", "not sent twice")
        assert len(world.requests) == 1, "publishes are not retried"
    assert [r.getMessage() for r in caplog.records if world.write_key in r.getMessage()] == []
    assert all(world.write_key not in str(r.exc_info) for r in caplog.records)


def test_without_stale_serving_an_outage_raises(world):
    settings = ClientSettings(retry=RetrySettings(attempts=1), cache={"serve_stale_when_unreachable": False})
    with StockadeClient(world.write_key, settings, http_client=world.http()) as client:
        client.publish_prompt(world.project_id, "strict", "x")
        client.get_prompt(world.project_id, "strict")
        world.server.stop()
        with pytest.raises(ServerUnavailableError):
            client.get_prompt(world.project_id, "strict")


async def test_5xx_is_retried_then_the_last_good_copy_is_served(world, postgres_url, caplog):
    """A real 500: the server's database is dropped under it (the server itself keeps running)."""
    caplog.set_level(logging.WARNING, logger="stockade.client")
    p = world.project_id
    client = StockadeClient(world.write_key, FAST_RETRY, http_client=world.http())
    try:
        client.publish_prompt(p, "db-gone", "cached before the outage")
        good = client.get_prompt(p, "db-gone")
        admin = await asyncpg.connect(postgres_url)
        try:
            await admin.execute(f'DROP DATABASE "{make_url(world.db_url).database}" WITH (FORCE)')
        finally:
            await admin.close()
        world.responses.clear()
        assert client.get_prompt(p, "db-gone") == good
        assert [r.status_code for r in world.responses] == [500, 500, 500]
        [warning] = [r for r in caplog.records if r.name == "stockade.client"]
        assert "server error 500" in warning.getMessage() and "last good copy" in warning.getMessage()
        with pytest.raises(ServerUnavailableError, match="500"):
            client.list_prompts(p)  # never read before: nothing to fall back on
    finally:
        client.close()
