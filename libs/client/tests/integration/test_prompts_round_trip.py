"""publish, get, list, versions and rollback against the real prompt-api; where the key travels; the logs."""

import logging

import pytest

from stockade.client import AsyncStockadeClient, ClientSettings, NotFoundError, StockadeClient

pytestmark = [pytest.mark.postgres, pytest.mark.nats]

READ_PATH = "/prompts/active-prompt-version"


def _assert_key_transport(world, key):
    """The header everywhere the server accepts it; the query only on the read endpoint, where the spec (4.1)
    takes nothing else (a header key there gets the uniform 404)."""
    assert world.requests
    for request in world.requests:
        in_query = key in str(request.url)
        in_header = request.headers.get("X-API-Key") == key
        if request.method == "GET" and request.url.path == READ_PATH:
            assert in_query and not in_header, request.url.path
            assert request.url.params["api_key"] == key
        else:
            assert in_header and not in_query, (request.method, request.url.path)


def client_side_records(caplog):
    """Log records of this process's client side: the server runs in the same process here, and its own
    access log (uvicorn) is the server's business, not the client's."""
    return [r for r in caplog.records if not r.name.startswith(("uvicorn", "stockade.prompt_api"))]


def test_sync_publish_get_list_versions_rollback(world, caplog):
    caplog.set_level(logging.DEBUG)
    p = world.project_id
    with StockadeClient(world.write_key, http_client=world.http()) as client:
        v1 = client.publish_prompt(p, "greeting", "Hello {name}", {"model": "m1"}, "first")
        v2 = client.publish_prompt(
            p, "greeting", [{"role": "system", "content": "Be brief."}], commit_message="chat form"
        )
        assert (v1.version, v2.version) == (1, 2)
        assert v1.config == {"model": "m1"} and v1.commit_message == "first"

        active = client.get_prompt(p, "greeting")
        assert active.version == 2
        assert active.content == [{"role": "system", "content": "Be brief."}]
        assert client.get_prompt(p, "greeting", version=1).content == "Hello {name}"
        with pytest.raises(NotFoundError, match="no version 9"):
            client.get_prompt(p, "greeting", version=9)

        client.publish_prompt(p, "farewell", "Bye")
        listed = {s.prompt_name: s for s in client.list_prompts(p)}
        assert set(listed) == {"greeting", "farewell"}
        assert listed["greeting"].active_version == 2 and listed["greeting"].active.version == 2

        rolled = client.rollback(p, "greeting", 1, "back to text")
        assert rolled.version == 3 and rolled.content == "Hello {name}" and rolled.config == {"model": "m1"}
        assert client.get_prompt(p, "greeting").version == 3
        assert [v.version for v in client.prompt_versions(p, "greeting")] == [3, 2, 1]
    _assert_key_transport(world, world.write_key)
    records = client_side_records(caplog)
    assert any(r.name == "httpx" for r in records), "httpx logs each request: the check below must see them"
    assert [r.getMessage() for r in records if world.write_key in r.getMessage()] == []


async def test_async_client_has_the_same_behaviour(world, caplog):
    caplog.set_level(logging.DEBUG)
    p = world.project_id
    async with AsyncStockadeClient(world.write_key, http_client=world.async_http()) as client:
        published = await client.publish_prompt(p, "summary", "Summarise: {text}", {"temperature": 0.2})
        assert published.version == 1
        got = await client.get_prompt(p, "summary")
        assert got == published
        assert [s.prompt_name for s in await client.list_prompts(p)] == ["summary"]
        await client.publish_prompt(p, "summary", "Summarise briefly: {text}")
        rolled = await client.rollback(p, "summary", 1)
        assert rolled.version == 3 and rolled.content == "Summarise: {text}"
        assert (await client.get_prompt(p, "summary", version=2)).content == "Summarise briefly: {text}"
    _assert_key_transport(world, world.write_key)
    assert [r.getMessage() for r in client_side_records(caplog) if world.write_key in r.getMessage()] == []


def test_an_organisation_member_reads_through_the_read_endpoint(world):
    """carol is in the organisation but not the project: the read works (spec 5.1), listing is 403."""
    with StockadeClient(world.write_key, ClientSettings(base_url=world.base_url)) as alice:
        alice.publish_prompt(world.project_id, "shared", "text")
    with StockadeClient(world.carol_key, ClientSettings(base_url=world.base_url)) as carol:
        assert carol.get_prompt(world.project_id, "shared").content == "text"
