"""Push refresh: another client's publish reaches prompt-api's outbox, JetStream on a real NATS server, and the
subscribed client's cache at once, without the subscriber calling anything."""

import asyncio
import json
import logging
import time

import nats
import pytest

from stockade.client import (
    AsyncStockadeClient,
    ClientSettings,
    PushSettings,
    ServerUnavailableError,
    StockadeClient,
)
from stockade.contracts.nats_sync import sync_with_server
from stockade.contracts.subjects import PROMPT_PUBLISHED_WILDCARD

pytestmark = [pytest.mark.postgres, pytest.mark.nats]

READ_PATH = "/prompts/active-prompt-version"


def _read_200s(world, prompt_name):
    return [
        r
        for r in world.responses
        if r.request.url.path == READ_PATH
        and r.request.url.params["prompt_name"] == prompt_name
        and r.status_code == 200
    ]


async def published(nats_url, publish, project_id, prompt_name, version):
    """Run ``publish`` and return once its prompt.published.v1 event has been delivered (to every subscriber
    there is: one that subscribes later never sees it)."""
    watcher = await nats.connect(nats_url)
    try:
        events = await watcher.subscribe(PROMPT_PUBLISHED_WILDCARD)
        await sync_with_server(watcher)
        await publish
        while True:
            event = json.loads((await events.next_msg(timeout=20)).data)
            if (event["project_id"], event["prompt_name"], event["version"]) == (
                project_id,
                prompt_name,
                version,
            ):
                return
    finally:
        await watcher.close()


async def test_async_client_refreshes_on_prompt_published(world, nats_url):
    p = world.project_id
    publisher = AsyncStockadeClient(world.write_key, ClientSettings(base_url=world.base_url))
    settings = ClientSettings(push=PushSettings(nats_url=nats_url))
    try:
        # The outbox relay sends version one's event a moment after the publish: arriving after the agent's
        # first read, it would start a refresh the request counts below do not expect. Wait until it passed.
        await published(nats_url, publisher.publish_prompt(p, "pushed", "version one"), p, "pushed", 1)
        async with AsyncStockadeClient(world.read_key, settings, http_client=world.async_http()) as agent:
            assert (await agent.get_prompt(p, "pushed")).version == 1
            # with push connected, a confirmed copy is served without a request
            sent = len(world.requests)
            assert (await agent.get_prompt(p, "pushed")).version == 1
            assert len(world.requests) == sent
            await agent.list_prompts(p)  # no event covers listings: they always ask
            assert len(world.requests) == sent + 1

            await publisher.publish_prompt(p, "pushed", "version two")
            deadline = time.monotonic() + 20
            while len(_read_200s(world, "pushed")) < 2:  # the refresh the event triggered
                assert time.monotonic() < deadline, "no refresh after prompt.published.v1"
                await asyncio.sleep(0.05)
            sent = len(world.requests)
            refreshed = await agent.get_prompt(p, "pushed")
            assert (refreshed.version, refreshed.content) == (2, "version two")
            assert len(world.requests) == sent, "the refreshed copy is served from the cache"
    finally:
        await publisher.aclose()


def test_sync_client_refreshes_on_prompt_published(world, nats_url):
    p = world.project_id
    settings = ClientSettings(push=PushSettings(nats_url=nats_url))
    with StockadeClient(world.write_key, ClientSettings(base_url=world.base_url)) as publisher:
        # As in the async test: version one's event, late, would start a refresh of its own (the first event
        # of a fresh prompt-api is the slowest), whose answer could already be version two.
        publish = asyncio.to_thread(publisher.publish_prompt, p, "pushed-sync", "one")
        asyncio.run(published(nats_url, publish, p, "pushed-sync", 1))
        with StockadeClient(world.read_key, settings, http_client=world.http()) as agent:
            assert agent.get_prompt(p, "pushed-sync").content == "one"
            publisher.publish_prompt(p, "pushed-sync", "two")
            deadline = time.monotonic() + 20
            while len(_read_200s(world, "pushed-sync")) < 2:
                assert time.monotonic() < deadline, "no refresh after prompt.published.v1"
                time.sleep(0.05)
            sent = len(world.requests)
            assert agent.get_prompt(p, "pushed-sync").content == "two"
            assert len(world.requests) == sent


async def test_without_push_every_read_revalidates(world):
    async with AsyncStockadeClient(world.write_key, http_client=world.async_http()) as client:
        await client.publish_prompt(world.project_id, "no-push", "x")
        for _ in range(3):
            await client.get_prompt(world.project_id, "no-push")
    reads = [r.status_code for r in world.responses if r.request.method == "GET"]
    assert reads == [200, 304, 304]


async def test_own_publish_is_read_back_at_once_with_push_on(world, nats_url):
    """A trusted copy must not hide the client's own publish while its event is still on the way."""
    settings = ClientSettings(push=PushSettings(nats_url=nats_url))
    async with AsyncStockadeClient(world.write_key, settings, http_client=world.async_http()) as client:
        await client.publish_prompt(world.project_id, "own", "one")
        assert (await client.get_prompt(world.project_id, "own")).content == "one"
        for n in range(2, 5):
            await client.publish_prompt(world.project_id, "own", f"v{n}")
            assert (await client.get_prompt(world.project_id, "own")).version == n
        await client.rollback(world.project_id, "own", 1)
        assert (await client.get_prompt(world.project_id, "own")).content == "one"


async def test_a_refresh_answered_before_own_publish_does_not_hide_it(world, nats_url):
    """The race CI once hit: a push refresh's answer (the version before) lands after the client's own publish
    invalidated the copy. That late answer must not make the old copy trusted again."""
    p = world.project_id
    hold, held, release = False, asyncio.Event(), asyncio.Event()

    async def hold_reads(response):
        if hold and response.request.method == "GET" and response.request.url.path == READ_PATH:
            held.set()
            await asyncio.wait_for(release.wait(), timeout=20)

    http = world.async_http()
    http.event_hooks["response"].append(hold_reads)
    publisher = AsyncStockadeClient(world.write_key, ClientSettings(base_url=world.base_url))
    settings = ClientSettings(push=PushSettings(nats_url=nats_url))
    try:
        await published(nats_url, publisher.publish_prompt(p, "late", "one"), p, "late", 1)
        async with AsyncStockadeClient(world.write_key, settings, http_client=http) as agent:
            assert (await agent.get_prompt(p, "late")).version == 1
            hold = True  # the refresh version two's event starts is answered, then held here
            await published(nats_url, publisher.publish_prompt(p, "late", "two"), p, "late", 2)
            await asyncio.wait_for(held.wait(), timeout=20)
            hold = False
            assert (await agent.publish_prompt(p, "late", "three")).version == 3
            release.set()
            read = await agent.get_prompt(p, "late")
            assert (read.version, read.content) == (3, "three")
    finally:
        release.set()
        await publisher.aclose()


async def test_nats_down_at_start_leaves_push_off_and_reads_working(world, caplog):
    from stockade.testing.ports import free_port

    down = ClientSettings(
        push=PushSettings(nats_url=f"nats://127.0.0.1:{free_port()}", connect_timeout_s=0.5)
    )
    client = AsyncStockadeClient(world.write_key, down, http_client=world.async_http())
    with pytest.raises(ServerUnavailableError, match="push refresh: NATS unreachable"):
        await client.start_push()
    await client.aclose()

    async with AsyncStockadeClient(world.write_key, down, http_client=world.async_http()) as client:
        await client.publish_prompt(world.project_id, "no-nats", "x")
        for _ in range(2):
            assert (await client.get_prompt(world.project_id, "no-nats")).content == "x"
    assert [r.status_code for r in world.responses if r.request.method == "GET"] == [200, 304]
    [warning] = [r for r in caplog.records if r.name == "stockade.client" and r.levelno == logging.WARNING]
    assert "push refresh is off" in warning.getMessage()


def test_sync_client_with_nats_down_at_start(world, caplog):
    from stockade.testing.ports import free_port

    down = ClientSettings(
        push=PushSettings(nats_url=f"nats://127.0.0.1:{free_port()}", connect_timeout_s=0.5)
    )
    with StockadeClient(world.write_key, down, http_client=world.http()) as client:
        client.publish_prompt(world.project_id, "no-nats-sync", "y")
        assert client.get_prompt(world.project_id, "no-nats-sync").content == "y"
    assert any("push refresh is off" in r.getMessage() for r in caplog.records)
