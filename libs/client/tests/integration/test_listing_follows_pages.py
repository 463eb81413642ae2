"""The client's listings follow prompt-api's cursor pages: more than one page comes back whole."""

import pytest

from stockade.client import AsyncStockadeClient, StockadeClient
from stockade.prompt_api.paging import DEFAULT_LIMIT

pytestmark = [pytest.mark.postgres, pytest.mark.nats]


def _listing_requests(world, path):
    return [r for r in world.requests if r.method == "GET" and r.url.path == path]


def test_sync_list_prompts_and_versions_follow_every_page(world):
    p = world.project_id
    names = [f"p{i:03d}" for i in range(DEFAULT_LIMIT + 3)]
    with StockadeClient(world.write_key, http_client=world.http()) as client:
        for name in names:
            client.publish_prompt(p, name, f"text of {name}")
        for i in range(DEFAULT_LIMIT + 1):
            client.publish_prompt(p, "long", f"v{i + 1}")
        world.requests.clear()

        listed = client.list_prompts(p)
        assert sorted(s.prompt_name for s in listed) == sorted([*names, "long"])
        assert len({s.prompt_name for s in listed}) == len(listed)
        pages = _listing_requests(world, "/prompts")
        assert len(pages) == 2 and "cursor" not in pages[0].url.params and "cursor" in pages[1].url.params

        versions = client.prompt_versions(p, "long")
        assert [v.version for v in versions] == list(range(DEFAULT_LIMIT + 1, 0, -1))
        assert client.get_prompt(p, "long", version=1).content == "v1"  # the oldest is on the last page


async def test_async_list_prompts_follows_every_page(world):
    p = world.project_id
    names = [f"q{i:03d}" for i in range(DEFAULT_LIMIT + 2)]
    async with AsyncStockadeClient(world.write_key, http_client=world.async_http()) as client:
        for name in names:
            await client.publish_prompt(p, name, "x")
        world.requests.clear()
        listed = await client.list_prompts(p)
        assert [s.prompt_name for s in listed] == sorted(names)
        assert len(_listing_requests(world, "/prompts")) == 2
