"""The prompt and skill pages over HTTP against prompt-api on a real socket (same PostgreSQL, real NATS): the key
is the user's own, sealed to the session; prompt-api's refusals reach the page with their status."""

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest

pytestmark = [pytest.mark.postgres, pytest.mark.nats]


@asynccontextmanager
async def signed_in(world, email) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=world.base_url) as client:
        answer = await client.post(
            "/login", data={"email": email, "password": world.password, "next": "/projects"}
        )
        assert answer.status_code == 303
        yield client


def csrf(page: httpx.Response) -> str:
    found = re.search(r'name="csrf-token" content="([^"]+)"', page.text)
    assert found
    return found.group(1)


async def connect(client, key) -> httpx.Response:
    page = await client.get("/projects")
    return await client.post("/projects/key", data={"csrf_token": csrf(page), "api_key": key})


async def test_without_a_key_the_pages_ask_for_one(prompt_world):
    async with signed_in(prompt_world, prompt_world.reviewer) as client:
        answer = await client.get(f"/projects/{prompt_world.shop}")
        assert answer.status_code == 303 and answer.headers["location"] == "/projects?need=key"
        page = await client.get("/projects?need=key")
        assert "Connect your API key first" in page.text
        listed = re.findall(r'data-project-id="([^"]+)"', page.text)
        assert listed == [prompt_world.legal, prompt_world.shop]  # by organisation, then name


async def test_only_your_own_live_key_connects_and_it_is_never_stored_in_clear(prompt_world):
    async with signed_in(prompt_world, prompt_world.author) as client:
        other = await connect(client, prompt_world.keys["reviewer"])
        assert other.status_code == 422 and "belongs to another user" in other.text
        bad = await connect(client, "stk_nothing_like_a_key")
        assert bad.status_code == 422 and "unknown or revoked" in bad.text
        ok = await connect(client, prompt_world.keys["author"])
        assert ok.status_code == 303
        cookie = ok.cookies.get("stockade_prompt_key")
        assert cookie and prompt_world.keys["author"] not in cookie
        set_cookie = ok.headers["set-cookie"].lower()
        assert "httponly" in set_cookie and "samesite=strict" in set_cookie
        assert (await client.get(f"/projects/{prompt_world.legal}")).status_code == 200
        # the sealed cookie opens nothing in another session of the same user
        async with signed_in(prompt_world, prompt_world.author) as second:
            second.cookies.set("stockade_prompt_key", cookie)
            moved = await second.get(f"/projects/{prompt_world.legal}")
            assert moved.status_code == 303 and moved.headers["location"] == "/projects?need=key"


async def test_prompt_api_decides_membership_and_the_page_says_so(prompt_world):
    async with signed_in(prompt_world, prompt_world.author) as client:
        await connect(client, prompt_world.keys["author"])
        # author is not a member of shop: the same 404 page as a project that does not exist (no oracle)
        refused = await client.get(f"/projects/{prompt_world.shop}")
        unknown = await client.get("/projects/" + "0" * 32)
        assert refused.status_code == unknown.status_code == 404
        assert refused.text.replace(prompt_world.shop, "X") == unknown.text.replace("0" * 32, "X")
        assert "no such project" in refused.text
        # a non-approver may look at the queue, but prompt-api refuses the decision
        queue = await client.get(f"/projects/{prompt_world.legal}/reviews")
        assert queue.status_code == 200
        proposal = re.findall(r'section class="card proposal" data-proposal-id="([^"]+)"', queue.text)[0]
        approve = await client.post(
            f"/projects/{prompt_world.legal}/reviews/{proposal}/approve",
            data={"csrf_token": csrf(queue), "comment": ""},
        )
        assert approve.status_code == 403 and "approver tag" in approve.text
        # without the CSRF token nothing reaches prompt-api
        forged = await client.post(
            f"/projects/{prompt_world.legal}/reviews/{proposal}/approve", data={"comment": ""}
        )
        assert forged.status_code == 403 and "CSRF" in forged.text


async def test_diff_is_escaped_and_rollback_goes_through_prompt_api(prompt_world):
    async with signed_in(prompt_world, prompt_world.reviewer) as client:
        await connect(client, prompt_world.keys["reviewer"])
        page = await client.get(f"/projects/{prompt_world.shop}/prompts/greeting")
        assert page.status_code == 200
        assert "Hello &lt;b&gt;friend&lt;/b&gt;!" in page.text and "<b>friend</b>" not in page.text
        assert '"temperature": 0.2' in page.text.replace("&#34;", '"')
        rolled = await client.post(
            f"/projects/{prompt_world.shop}/prompts/greeting/rollback",
            data={"csrf_token": csrf(page), "version": "1"},
        )
        assert rolled.status_code == 303
        after = await client.get(rolled.headers["location"])
        assert "Version 3 is active: the content of version 1." in after.text
        async with httpx.AsyncClient(base_url=prompt_world.prompt_api) as api:
            read = await api.get(
                "/prompts/active-prompt-version",
                params={
                    "api_key": prompt_world.keys["reviewer"],
                    "project_id": prompt_world.shop,
                    "prompt_name": "greeting",
                },
            )
        assert read.json()["version"] == 3 and read.json()["content"] == "Hello!\nHow can I help?"
        assert read.json()["commit_message"] == "rollback to version 1"


async def test_a_key_revoked_after_connecting_is_refused_by_prompt_api(prompt_world):
    async with signed_in(prompt_world, prompt_world.reviewer) as client:
        await connect(client, prompt_world.keys["reviewer"])
        assert (await client.get(f"/projects/{prompt_world.shop}")).status_code == 200
        keys_page = await client.get("/api-keys")
        [key_id] = re.findall(r'data-key-id="([^"]+)"', keys_page.text)
        revoked = await client.post(f"/api-keys/{key_id}/revoke", data={"csrf_token": csrf(keys_page)})
        assert revoked.status_code == 303
        refused = await client.get(f"/projects/{prompt_world.shop}")
        assert refused.status_code == 401
        assert "prompt-api refused (401)" in refused.text and "not revoked" in refused.text
