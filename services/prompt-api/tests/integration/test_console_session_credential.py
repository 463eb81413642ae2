"""A console session's short-lived credential (stockade.identity.session_keys) is checked by prompt-api exactly as
an API key of the signed-in user (spec 5.1): it opens the user's own projects and nothing else, stops at its
expiry and at sign-out with the statuses of a revoked key (spec 7), and never shows up among the user's keys."""

from datetime import timedelta

from stockade import identity
from stockade.identity import keys
from stockade.identity.session_keys import CREDENTIAL_TTL, credential_key, session_credential
from stockade.identity.sessions import end_session, end_user_sessions, start_session
from stockade.identity.tables import Deployment
from stockade.runtime.db_types import utcnow

READ = "/prompts/active-prompt-version"


async def _publish(client, key, project_id, content="v"):
    return await client.post(
        READ,
        headers={"X-API-Key": key},
        json={"project_id": project_id, "prompt_name": "p", "content": content},
    )


async def test_the_credential_acts_as_the_user_within_their_rights(
    client, world, sessions, console_credential
):
    assert (await _publish(client, world.write_key, world.direct.id)).status_code == 201
    _, key = await console_credential(world.alice.id)
    assert keys.key_id_of(key) is not None  # an ordinary, well-formed key

    listed = await client.get("/prompts", params={"project_id": world.direct.id}, headers={"X-API-Key": key})
    assert listed.status_code == 200 and [p["prompt_name"] for p in listed.json()] == ["p"]
    read = await client.get(READ, params={"api_key": key, "project_id": world.direct.id, "prompt_name": "p"})
    assert read.status_code == 200
    assert (await _publish(client, key, world.direct.id, "v2")).status_code == 201  # a member may publish

    # outside the user's rights, the same answers as the user's own key gets
    foreign = await client.get(
        "/prompts", params={"project_id": world.foreign.id}, headers={"X-API-Key": key}
    )
    assert foreign.status_code == 403
    assert (await _publish(client, key, world.foreign.id)).status_code == 403
    assert (await _publish(client, key, world.review.id)).status_code == 403  # Manual review, no approver tag
    # carol (organisation member, no project) gets nothing of alice's project through her own credential
    _, carols = await console_credential(world.carol.id)
    listed = await client.get(
        "/prompts", params={"project_id": world.direct.id}, headers={"X-API-Key": carols}
    )
    assert listed.status_code == 403
    assert (await _publish(client, carols, world.direct.id)).status_code == 403

    async with sessions() as s:  # not among the user's keys, so never revoked or shown by mistake there
        assert keys.key_id_of(key) not in {k.id for k in await identity.list_api_keys(s, world.alice.id)}


async def test_an_expired_credential_is_refused_like_a_revoked_key(
    client, world, sessions, console_credential
):
    assert (await _publish(client, world.write_key, world.direct.id)).status_code == 201
    _, key = await console_credential(world.alice.id, now=utcnow() - CREDENTIAL_TTL - timedelta(seconds=1))
    listed = await client.get("/prompts", params={"project_id": world.direct.id}, headers={"X-API-Key": key})
    assert listed.status_code == 401
    assert (await _publish(client, key, world.direct.id)).status_code == 401
    read = await client.get(READ, params={"api_key": key, "project_id": world.direct.id, "prompt_name": "p"})
    assert read.status_code == 404


async def test_sign_out_ends_the_credential(client, world, sessions, console_credential):
    assert (await _publish(client, world.write_key, world.direct.id)).status_code == 201
    started, key = await console_credential(world.alice.id)
    headers = {"X-API-Key": key}
    assert (
        await client.get("/prompts", params={"project_id": world.direct.id}, headers=headers)
    ).status_code == 200
    async with sessions() as s:
        assert await end_session(s, started.token)
    assert (
        await client.get("/prompts", params={"project_id": world.direct.id}, headers=headers)
    ).status_code == 401
    read = await client.get(READ, params={"api_key": key, "project_id": world.direct.id, "prompt_name": "p"})
    assert read.status_code == 404

    _, other = await console_credential(world.alice.id)  # sign-out everywhere ends every session's credential
    async with sessions() as s:
        assert await end_user_sessions(s, world.alice.id) >= 1
    assert (
        await client.get("/prompts", params={"project_id": world.direct.id}, headers={"X-API-Key": other})
    ).status_code == 401


async def test_the_credential_is_reused_renewed_and_bound_to_the_session_token(client, world, sessions):
    async with sessions() as s:
        started = await start_session(s, world.alice.id, timedelta(hours=12))
        common = dict(
            console_session_id=started.session_id,
            user_id=world.alice.id,
            session_token=started.token,
            session_expires_at=started.expires_at,
            deployment=Deployment.ONPREM,
        )
        first = await session_credential(s, **common)
        assert await session_credential(s, **common) == first  # reused while it has time left
        later = utcnow() + CREDENTIAL_TTL  # past its renewal point: a new one
        renewed = await session_credential(s, **common, now=later)
        assert renewed != first
    # the secret is derived from the session token: another token gives another, unusable key for that id
    forged = credential_key("not-the-token", keys.key_id_of(first))
    listed = await client.get(
        "/prompts", params={"project_id": world.direct.id}, headers={"X-API-Key": forged}
    )
    assert listed.status_code == 401


async def test_a_hosted_deployment_credential_only_reads(client, world, sessions, console_credential):
    _, key = await console_credential(world.alice.id, deployment=Deployment.HOSTED)
    assert (await _publish(client, key, world.direct.id)).status_code == 403
