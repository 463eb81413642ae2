"""Spec 5.1 and 7 for GET /prompts and the publish endpoints: 401 before anything, 403 rules, 413, 422."""

import pytest
from sqlalchemy import func, select

from stockade import identity
from stockade.identity import keys
from stockade.prompt_api.tables import OutboxEvent, Prompt, PromptVersion

PUBLISH = "/prompts/active-prompt-version"


def body(project_id, name="greeting", content="Hi"):
    return {"project_id": project_id, "prompt_name": name, "content": content}


async def _counts(sessions):
    async with sessions() as s:
        return tuple(
            [
                (await s.execute(select(func.count()).select_from(t))).scalar_one()
                for t in (Prompt, PromptVersion, OutboxEvent)
            ]
        )


# --- GET /prompts ---------------------------------------------------------------------------------------------
async def test_listing_with_header_or_query_key(client, world):
    await client.post(PUBLISH, headers={"X-API-Key": world.write_key}, json=body(world.direct.id))
    by_header = await client.get(
        "/prompts", params={"project_id": world.direct.id}, headers={"X-API-Key": world.read_key}
    )
    by_query = await client.get("/prompts", params={"project_id": world.direct.id, "api_key": world.read_key})
    assert by_header.status_code == by_query.status_code == 200
    assert by_header.json() == by_query.json()
    [item] = by_header.json()
    assert (
        item["prompt_name"] == "greeting"
        and item["active_version"] == 1
        and item["active"]["content"] == "Hi"
    )


async def test_header_is_preferred_over_query(client, world):
    r = await client.get(
        "/prompts",
        params={"project_id": world.direct.id, "api_key": world.read_key},
        headers={"X-API-Key": "stk_bad"},
    )
    assert r.status_code == 401


@pytest.mark.parametrize("path", ["/prompts", "/skills", "/skills/index.json"])
async def test_listing_401_for_missing_invalid_or_revoked_keys(client, world, sessions, path):
    async with sessions() as s:
        revoked = await identity.create_api_key(s, world.alice.id, scope="read")
        await identity.revoke_api_key(s, revoked.id)
        await s.commit()
    params = {"project_id": world.direct.id}
    for headers in (
        {},
        {"X-API-Key": "garbage"},
        {"X-API-Key": keys.generate_key().plaintext},
        {"X-API-Key": revoked.key},
    ):
        r = await client.get(path, params=params, headers=headers)
        assert r.status_code == 401, headers
        assert r.json()["error"]["code"] == "unauthorized"
    # 401 comes before resolving anything, even a missing project_id
    assert (await client.get(path, headers={"X-API-Key": "garbage"})).status_code == 401


@pytest.mark.parametrize("path", ["/prompts", "/skills", "/skills/index.json"])
async def test_listing_is_stricter_than_reading(client, world, path):
    await client.post(PUBLISH, headers={"X-API-Key": world.write_key}, json=body(world.direct.id))
    # carol is in the organisation but not in the project: she can read one prompt, not list (spec 5.1)
    read = await client.get(
        PUBLISH, params={"api_key": world.carol_key, "project_id": world.direct.id, "prompt_name": "greeting"}
    )
    assert read.status_code == 200
    r = await client.get(path, params={"project_id": world.direct.id}, headers={"X-API-Key": world.carol_key})
    assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden"
    for project in (world.foreign.id, "no-such-project"):
        r = await client.get(path, params={"project_id": project}, headers={"X-API-Key": world.write_key})
        assert r.status_code == 403


async def test_removal_from_project_applies_to_listing_at_once(client, world, sessions):
    params, headers = {"project_id": world.direct.id}, {"X-API-Key": world.read_key}
    assert (await client.get("/prompts", params=params, headers=headers)).status_code == 200
    async with sessions() as s:
        await identity.remove_project_member(s, world.direct.id, world.alice.id)
        await s.commit()
    assert (await client.get("/prompts", params=params, headers=headers)).status_code == 403


# --- POST publish ---------------------------------------------------------------------------------------------
async def test_publish_201_returns_the_version(client, world, sessions):
    r = await client.post(
        PUBLISH,
        headers={"X-API-Key": world.write_key},
        json={**body(world.direct.id), "config": {"model": "m", "temperature": 0}, "commit_message": "init"},
    )
    assert r.status_code == 201
    out = r.json()
    assert out["version"] == 1 and out["config"] == {"model": "m", "temperature": 0}
    assert out["commit_message"] == "init" and out["published_by"] == world.alice.id
    assert await _counts(sessions) == (1, 1, 1)


async def test_publish_key_in_query_string_is_401(client, world, sessions):
    r = await client.post(PUBLISH, params={"api_key": world.write_key}, json=body(world.direct.id))
    assert r.status_code == 401 and "query string" in r.json()["error"]["message"]
    assert await _counts(sessions) == (0, 0, 0)


@pytest.mark.parametrize("endpoint", [PUBLISH, "/skills/active-version"])
async def test_publish_401_for_invalid_or_revoked_key_even_with_a_bad_body(client, world, sessions, endpoint):
    async with sessions() as s:
        await identity.revoke_api_key(s, world.write_key_id)
        await s.commit()
    for headers in ({}, {"X-API-Key": "nope"}, {"X-API-Key": world.write_key}):
        r = await client.post(endpoint, headers=headers, content=b"{not json")
        assert r.status_code == 401
    assert await _counts(sessions) == (0, 0, 0)


@pytest.mark.parametrize("which", ["read_key", "legacy_key", "hosted_key"])
async def test_publish_403_for_keys_that_only_read(client, world, sessions, which):
    r = await client.post(PUBLISH, headers={"X-API-Key": getattr(world, which)}, json=body(world.direct.id))
    assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden"
    assert await _counts(sessions) == (0, 0, 0)


async def test_hosted_deployment_refuses_every_publish(app_factory, world, sessions):
    hosted = await app_factory(deployment="hosted")
    r = await hosted.post(PUBLISH, headers={"X-API-Key": world.write_key}, json=body(world.direct.id))
    assert r.status_code == 403
    assert (
        await hosted.get(
            "/prompts", params={"project_id": world.direct.id}, headers={"X-API-Key": world.write_key}
        )
    ).status_code == 200
    assert await _counts(sessions) == (0, 0, 0)


async def test_publish_403_without_project_membership(client, world, sessions):
    for project in (world.foreign.id, "no-such-project"):
        r = await client.post(PUBLISH, headers={"X-API-Key": world.write_key}, json=body(project))
        assert r.status_code == 403
    r = await client.post(PUBLISH, headers={"X-API-Key": world.carol_key}, json=body(world.direct.id))
    assert r.status_code == 403
    assert await _counts(sessions) == (0, 0, 0)


async def test_manual_review_needs_the_approver_tag_on_every_request(client, world, sessions):
    headers = {"X-API-Key": world.write_key}
    r = await client.post(PUBLISH, headers=headers, json=body(world.review.id))
    assert r.status_code == 403 and "approver" in r.json()["error"]["message"]
    assert await _counts(sessions) == (0, 0, 0)
    async with sessions() as s:
        await identity.grant_tag(s, world.review.id, world.alice.id)
        await s.commit()
    assert (await client.post(PUBLISH, headers=headers, json=body(world.review.id))).status_code == 201
    async with sessions() as s:
        await identity.revoke_tag(s, world.review.id, world.alice.id)
        await s.commit()
    before = await _counts(sessions)
    for _ in range(2):  # retrying does not help (rule 5.1.6)
        assert (
            await client.post(PUBLISH, headers=headers, json=body(world.review.id, content="x"))
        ).status_code == 403
    assert await _counts(sessions) == before


async def test_revocation_and_leaving_the_project_refuse_the_next_publish(client, world, sessions):
    headers = {"X-API-Key": world.write_key}
    assert (await client.post(PUBLISH, headers=headers, json=body(world.direct.id))).status_code == 201
    async with sessions() as s:
        await identity.remove_project_member(s, world.direct.id, world.alice.id)
        await s.commit()
    assert (await client.post(PUBLISH, headers=headers, json=body(world.direct.id))).status_code == 403
    async with sessions() as s:
        await identity.add_project_member(s, world.direct.id, world.alice.id)
        await identity.revoke_api_key(s, world.write_key_id)
        await s.commit()
    assert (await client.post(PUBLISH, headers=headers, json=body(world.direct.id))).status_code == 401
    assert await _counts(sessions) == (1, 1, 1)


@pytest.mark.parametrize(
    "payload, fragment",
    [
        (b"{not json", "not valid JSON"),
        (b"[]", "body"),
        (b'{"project_id": "p"}', "prompt_name"),
        (b'{"project_id": "p", "prompt_name": "../x", "content": "c"}', "prompt_name"),
        (b'{"project_id": "p", "prompt_name": "a", "content": 5}', "content"),
        (b'{"project_id": "p", "prompt_name": "a", "content": [{"role": "boss", "content": "x"}]}', "role"),
        (b'{"project_id": "p", "prompt_name": "a", "content": "c", "config": "hot"}', "config"),
        (b'{"project_id": "p", "prompt_name": "a", "content": "c", "surprise": 1}', "surprise"),
    ],
)
async def test_publish_422_names_the_problem(client, world, sessions, payload, fragment):
    r = await client.post(
        PUBLISH, headers={"X-API-Key": world.write_key, "Content-Type": "application/json"}, content=payload
    )
    assert r.status_code == 422
    err = r.json()["error"]
    assert err["code"] == "invalid_request" and fragment in err["message"]
    assert await _counts(sessions) == (0, 0, 0)


async def test_publish_413_over_the_body_limit(app_factory, world, sessions):
    from stockade.prompt_api.settings import LimitSettings

    small = await app_factory(limits=LimitSettings(max_body_bytes=4096))
    big = body(world.direct.id, content="x" * 5000)
    r = await small.post(PUBLISH, headers={"X-API-Key": world.write_key}, json=big)
    assert r.status_code == 413 and r.json()["error"]["code"] == "payload_too_large"

    async def chunks():  # no Content-Length: refused while streaming
        for _ in range(10):
            yield b"x" * 1000

    r = await small.post(PUBLISH, headers={"X-API-Key": world.write_key}, content=chunks())
    assert r.status_code == 413
    assert await _counts(sessions) == (0, 0, 0)


async def test_history_and_rollback(client, world):
    headers = {"X-API-Key": world.write_key}
    for text in ("one", "two", "three"):
        assert (
            await client.post(PUBLISH, headers=headers, json=body(world.direct.id, content=text))
        ).status_code == 201
    r = await client.post(
        "/prompts/greeting/rollback", headers=headers, json={"project_id": world.direct.id, "version": 1}
    )
    assert r.status_code == 201 and r.json()["version"] == 4 and r.json()["content"] == "one"
    assert r.json()["commit_message"] == "rollback to version 1"
    hist = await client.get(
        "/prompts/greeting/versions", params={"project_id": world.direct.id}, headers=headers
    )
    assert [v["version"] for v in hist.json()] == [4, 3, 2, 1]
    assert hist.json()[0]["sha256"] == hist.json()[3]["sha256"]
    read = await client.get(
        PUBLISH, params={"api_key": world.read_key, "project_id": world.direct.id, "prompt_name": "greeting"}
    )
    assert read.json()["content"] == "one" and read.json()["version"] == 4
    missing = await client.post(
        "/prompts/greeting/rollback", headers=headers, json={"project_id": world.direct.id, "version": 9}
    )
    assert missing.status_code == 404
    ro = await client.post(
        "/prompts/greeting/rollback",
        headers={"X-API-Key": world.read_key},
        json={"project_id": world.direct.id, "version": 1},
    )
    assert ro.status_code == 403
