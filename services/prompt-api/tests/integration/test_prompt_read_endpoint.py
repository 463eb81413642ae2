"""GET /prompts/active-prompt-version: one byte-identical 404 for every failure (spec 7, rule 1), ETag/304."""

import pytest

from stockade import identity
from stockade.identity import keys

PATH = "/prompts/active-prompt-version"


async def _publish(client, key, project_id, name="greeting", content="Hello {name}", **extra):
    r = await client.post(
        PATH,
        headers={"X-API-Key": key},
        json={"project_id": project_id, "prompt_name": name, "content": content, **extra},
    )
    assert r.status_code == 201, r.text
    return r.json()


async def test_read_returns_the_active_version_with_etag_and_304(client, world):
    await _publish(
        client, world.write_key, world.direct.id, config={"temperature": 0.2}, commit_message="first"
    )
    second = await _publish(
        client, world.write_key, world.direct.id, content=[{"role": "system", "content": "Be brief"}]
    )
    params = {"api_key": world.write_key, "project_id": world.direct.id, "prompt_name": "greeting"}
    r = await client.get(PATH, params=params)
    assert r.status_code == 200
    body = r.json()
    assert body["version"] == 2 and body["content"] == [{"role": "system", "content": "Be brief"}]
    assert body["sha256"] == second["sha256"] and len(body["sha256"]) == 64
    assert body["published_by"] == world.alice.id and body["project_id"] == world.direct.id
    assert body["prompt_name"] == "greeting" and body["published_at"] and "config" in body
    etag = r.headers["etag"]
    r304 = await client.get(PATH, params=params, headers={"If-None-Match": etag})
    assert r304.status_code == 304 and r304.content == b""
    await _publish(client, world.write_key, world.direct.id, content="v3")
    r3 = await client.get(PATH, params=params, headers={"If-None-Match": etag})
    assert r3.status_code == 200 and r3.json()["version"] == 3 and r3.headers["etag"] != etag


async def test_read_keys_of_every_scope_and_organisation_members_may_read(client, world):
    await _publish(client, world.write_key, world.direct.id)
    for key in (world.read_key, world.legacy_key, world.hosted_key, world.carol_key):
        r = await client.get(
            PATH, params={"api_key": key, "project_id": world.direct.id, "prompt_name": "greeting"}
        )
        assert r.status_code == 200, (
            key
        )  # carol: organisation member, not a project member: reading is allowed


async def test_every_failure_is_the_same_404_byte_for_byte(client, world, sessions):
    await _publish(client, world.write_key, world.direct.id)
    async with sessions() as s:
        outsider = await identity.create_user(s, "mallory@example.com")
        outsider_key = (await identity.create_api_key(s, outsider.id, scope="write")).key
        revoked = await identity.create_api_key(s, world.alice.id, scope="read")
        await identity.revoke_api_key(s, revoked.id)
        ingest = await identity.create_api_key(s, world.alice.id, scope="ingest", project=world.direct.id)
        await s.commit()
    good = {"api_key": world.write_key, "project_id": world.direct.id, "prompt_name": "greeting"}
    forged_body = "stk_" + world.write_key_id + "B" * 32
    failures = [
        {**good, "api_key": "not-a-key"},  # malformed
        {
            **good,
            "api_key": world.write_key[:-1] + ("A" if world.write_key[-1] != "A" else "B"),
        },  # bad checksum
        {**good, "api_key": forged_body + keys.checksum(forged_body)},  # right id, wrong secret
        {**good, "api_key": keys.generate_key().plaintext},  # unknown key
        {**good, "api_key": revoked.key},  # revoked
        {**good, "api_key": ingest.key},  # an ingest key: it opens guardrail-ingest only
        {**good, "project_id": "no-such-project"},  # unknown project
        {**good, "prompt_name": "no-such-prompt"},  # unknown prompt
        {**good, "api_key": outsider_key},  # owner not in the organisation
        {**good, "project_id": world.foreign.id},  # another organisation's project
        {"project_id": world.direct.id, "prompt_name": "greeting"},  # no key at all
        {},  # nothing
    ]
    answers = []
    for params in failures:
        r = await client.get(PATH, params=params)
        answers.append((r.status_code, r.content, r.headers.get("content-type"), r.headers.get("etag")))
    assert {a for a in answers} == {
        (404, b'{"error":{"code":"not_found","message":"not found"}}', "application/json", None)
    }
    # a key in the header does not count on this endpoint (spec: api_key query parameter)
    r = await client.get(
        PATH, params={k: v for k, v in good.items() if k != "api_key"}, headers={"X-API-Key": world.write_key}
    )
    assert r.status_code == 404


async def test_an_ingest_key_opens_no_prompt_endpoint(client, world, sessions):
    await _publish(client, world.write_key, world.direct.id)
    async with sessions() as s:
        ingest = await identity.create_api_key(s, world.alice.id, scope="ingest", project=world.direct.id)
        await s.commit()
    headers = {"X-API-Key": ingest.key}
    listing = await client.get("/prompts", params={"project_id": world.direct.id}, headers=headers)
    assert listing.status_code == 401, listing.text
    body = {"project_id": world.direct.id, "prompt_name": "greeting", "content": "pwned"}
    assert (await client.post(PATH, headers=headers, json=body)).status_code == 401


async def test_revocation_and_leaving_the_organisation_apply_on_the_next_request(client, world, sessions):
    await _publish(client, world.write_key, world.direct.id)
    params = {"api_key": world.carol_key, "project_id": world.direct.id, "prompt_name": "greeting"}
    assert (await client.get(PATH, params=params)).status_code == 200
    async with sessions() as s:
        await identity.remove_organisation_member(s, world.org.id, world.carol.id)
        await s.commit()
    assert (await client.get(PATH, params=params)).status_code == 404
    params["api_key"] = world.read_key
    assert (await client.get(PATH, params=params)).status_code == 200
    async with sessions() as s:
        keys_ = await identity.list_api_keys(s, world.alice.id)
        read_id = next(k.id for k in keys_ if k.scope == "read")
        await identity.revoke_api_key(s, read_id)
        await s.commit()
    assert (await client.get(PATH, params=params)).status_code == 404


@pytest.mark.parametrize("value", ['"x", W/"y"', "*"])
async def test_if_none_match_lists_and_star(client, world, value):
    await _publish(client, world.write_key, world.direct.id)
    params = {"api_key": world.write_key, "project_id": world.direct.id, "prompt_name": "greeting"}
    etag = (await client.get(PATH, params=params)).headers["etag"]
    header = value.replace('"x"', etag) if value != "*" else "*"
    assert (await client.get(PATH, params=params, headers={"If-None-Match": header})).status_code == 304
    assert (await client.get(PATH, params=params, headers={"If-None-Match": '"other"'})).status_code == 200
