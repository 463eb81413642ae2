"""The prompt and skill pages over HTTP against prompt-api on a real socket (same PostgreSQL, real NATS): the
console acts as the signed-in user through the session's short-lived credential (nothing to paste); prompt-api's
refusals reach the page with their status."""

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


@asynccontextmanager
async def identity_db(postgres_database):
    from stockade.runtime.db import create_engine, session_factory

    engine = create_engine(postgres_database)
    try:
        yield session_factory(engine)
    finally:
        await engine.dispose()


async def credentials_of(postgres_database, email):
    """The console credentials of ``email``'s sessions: (key id, revoked, expires_at, session id)."""
    from sqlalchemy import select

    from stockade.identity.tables import ApiKey, User

    async with identity_db(postgres_database) as sessions, sessions() as s:
        rows = await s.execute(
            select(ApiKey.id, ApiKey.revoked_at, ApiKey.expires_at, ApiKey.console_session_id)
            .join(User, User.id == ApiKey.owner_id)
            .where(User.email == email, ApiKey.console_session_id.is_not(None))
        )
        return rows.all()


async def test_a_member_sees_their_prompts_and_skills_without_pasting_a_key(prompt_world, postgres_database):
    async with signed_in(prompt_world, prompt_world.reviewer) as client:
        listed = await client.get("/projects")
        assert re.findall(r'data-project-id="([^"]+)"', listed.text) == [
            prompt_world.legal,
            prompt_world.shop,
        ]
        assert "api_key" not in listed.text  # no key form
        page = await client.get(f"/projects/{prompt_world.shop}")
        assert page.status_code == 200
        assert "greeting" in page.text and "refund-policy" in page.text
        prompt = await client.get(f"/projects/{prompt_world.shop}/prompts/greeting")
        assert prompt.status_code == 200 and "warmer greeting" in prompt.text
        assert not [c for c in client.cookies.jar if "key" in c.name]  # nothing key-like in the browser
    [(_, revoked, expires_at, _)] = await credentials_of(postgres_database, prompt_world.reviewer)
    assert revoked is None  # one credential, reused by every call of the session


async def test_a_user_of_another_organisation_gets_nothing(prompt_world, postgres_database, unique_name):
    from stockade import identity

    email = f"{unique_name('stranger')}@example.org"
    async with identity_db(postgres_database) as sessions, sessions() as s:
        other = await identity.create_organisation(s, unique_name("other"))
        theirs = await identity.create_project(s, other.id, "theirs")
        user = await identity.create_user(s, email, prompt_world.password)
        await identity.add_project_member(s, theirs.id, user.id)
        await s.commit()
    async with signed_in(prompt_world, email) as client:
        listed = await client.get("/projects")
        assert re.findall(r'data-project-id="([^"]+)"', listed.text) == [theirs.id]
        unknown = await client.get("/projects/" + "0" * 32)
        for path in ("", "/prompts/greeting", "/skills/refund-policy", "/reviews"):
            answer = await client.get(f"/projects/{prompt_world.shop}{path}")
            assert answer.status_code == 404, path
            assert "greeting" not in answer.text.replace("/prompts/greeting", "")
        refused = await client.get(f"/projects/{prompt_world.shop}")
        assert refused.text.replace(prompt_world.shop, "X") == unknown.text.replace("0" * 32, "X")


async def test_sign_out_revokes_the_credential_and_an_expired_one_is_renewed(prompt_world, postgres_database):
    from sqlalchemy import update

    from stockade.identity.tables import ApiKey
    from stockade.runtime.db_types import utcnow

    async with signed_in(prompt_world, prompt_world.reviewer) as client:
        assert (await client.get(f"/projects/{prompt_world.shop}")).status_code == 200
        [(first, _, _, session_id)] = await credentials_of(postgres_database, prompt_world.reviewer)
        async with identity_db(postgres_database) as sessions, sessions() as s:  # its lifetime runs out
            await s.execute(update(ApiKey).where(ApiKey.id == first).values(expires_at=utcnow()))
            await s.commit()
        assert (await client.get(f"/projects/{prompt_world.shop}")).status_code == 200  # a fresh one
        live = [r for r in await credentials_of(postgres_database, prompt_world.reviewer) if r[1] is None]
        assert [r[0] for r in live if r[0] != first] and all(r[3] == session_id for r in live)
        page = await client.get("/projects")
        assert (await client.post("/logout", data={"csrf_token": csrf(page)})).status_code == 303
    after = await credentials_of(postgres_database, prompt_world.reviewer)
    assert after and all(row[1] is not None for row in after)  # prompt-api refuses them from now on


async def test_prompt_api_decides_membership_and_the_page_says_so(prompt_world):
    async with signed_in(prompt_world, prompt_world.author) as client:
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


async def test_the_credential_is_not_one_of_the_users_keys(prompt_world):
    """The API keys page lists the user's own keys only; revoking them leaves the console's credential alone."""
    async with signed_in(prompt_world, prompt_world.reviewer) as client:
        assert (await client.get(f"/projects/{prompt_world.shop}")).status_code == 200
        keys_page = await client.get("/api-keys")
        [key_id] = re.findall(r'data-key-id="([^"]+)"', keys_page.text)  # the fixture's write key only
        assert prompt_world.keys["reviewer"][4:16] == key_id
        revoked = await client.post(f"/api-keys/{key_id}/revoke", data={"csrf_token": csrf(keys_page)})
        assert revoked.status_code == 303
        assert (await client.get(f"/projects/{prompt_world.shop}")).status_code == 200
