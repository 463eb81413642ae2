"""Who may read, list, publish, roll back, propose and decide guardrail policies: the prompts' matrix (spec 5.1, 7)
row for row, from current rows; Manual review binds policy versions exactly as prompt versions."""

import json

from sqlalchemy import func, select

from stockade import identity
from stockade.prompt_api.tables import OutboxEvent, PolicyProposal

PUBLISH = "/policies/active-version"
READ = "/policies/active-version"
POLICY = "guardrails:\n  checks:\n    pii:\n      enabled: true\n"


def body(project_id, yaml=POLICY, name="default"):
    return {"project_id": project_id, "policy_name": name, "yaml": yaml}


async def _count(sessions, table, *where):
    async with sessions() as s:
        return (await s.execute(select(func.count()).select_from(table).where(*where))).scalar_one()


async def test_reads_and_listings_follow_the_prompt_rules(client, world, sessions):
    async with sessions() as s:
        bob = await identity.create_user(s, "bob@example.com")
        await identity.add_project_member(s, world.foreign.id, bob.id)
        bobs = (await identity.create_api_key(s, bob.id, scope="write")).key
        revoked = await identity.create_api_key(s, world.alice.id, scope="write")
        ingest = (
            await identity.create_api_key(s, world.alice.id, scope="ingest", project=world.direct.id)
        ).key
        await s.commit()
    assert (
        await client.post(PUBLISH, headers={"X-API-Key": world.write_key}, json=body(world.direct.id))
    ).is_success
    assert (await client.post(PUBLISH, headers={"X-API-Key": bobs}, json=body(world.foreign.id))).is_success

    async def read(key, project_id):
        headers = {"X-API-Key": key} if key else {}
        return await client.get(
            READ, params={"project_id": project_id, "policy_name": "default"}, headers=headers
        )

    assert (await read(world.read_key, world.direct.id)).status_code == 200
    assert (await read(world.carol_key, world.direct.id)).status_code == 200  # organisation member reads
    assert (await read(revoked.key, world.direct.id)).status_code == 200
    async with sessions() as s:
        await identity.revoke_api_key(s, revoked.id)
        await s.commit()
    uniform = [
        await read(revoked.key, world.direct.id),  # revoked: on the next request
        await read(None, world.direct.id),
        await read("stk_not-a-key", world.direct.id),
        await read(ingest, world.direct.id),  # an ingest key opens guardrail-ingest only
        await read(world.write_key, world.foreign.id),  # another organisation's existing policy
        await read(bobs, world.direct.id),
    ]
    assert {r.status_code for r in uniform} == {404}
    assert len({r.content for r in uniform}) == 1

    async def listing(key, project_id):
        return await client.get("/policies", params={"project_id": project_id}, headers={"X-API-Key": key})

    assert (await listing(world.read_key, world.direct.id)).status_code == 200
    assert (await listing(revoked.key, world.direct.id)).status_code == 401
    assert (await client.get("/policies", params={"project_id": world.direct.id})).status_code == 401
    assert (await listing(world.carol_key, world.direct.id)).status_code == 403  # listing needs the project
    assert (await listing(world.write_key, world.foreign.id)).status_code == 403
    history = await client.get(
        "/policies/default/versions",
        params={"project_id": world.foreign.id},
        headers={"X-API-Key": world.write_key},
    )
    assert history.status_code == 403


async def test_publish_and_rollback_need_write_scope_membership_and_the_header(client, world, sessions):
    pid = world.direct.id
    ok = await client.post(PUBLISH, headers={"X-API-Key": world.write_key}, json=body(pid))
    assert ok.status_code == 201
    query_only = await client.post(PUBLISH, params={"api_key": world.write_key}, json=body(pid))
    assert query_only.status_code == 401 and "query string" in query_only.text
    for key in (world.read_key, world.legacy_key, world.hosted_key):
        assert (await client.post(PUBLISH, headers={"X-API-Key": key}, json=body(pid))).status_code == 403
        rolled = await client.post(
            "/policies/default/rollback", headers={"X-API-Key": key}, json={"project_id": pid, "version": 1}
        )
        assert rolled.status_code == 403
    carol = await client.post(PUBLISH, headers={"X-API-Key": world.carol_key}, json=body(pid))
    assert carol.status_code == 403  # organisation member, not a project member
    foreign = await client.post(PUBLISH, headers={"X-API-Key": world.write_key}, json=body(world.foreign.id))
    assert foreign.status_code == 403
    # the order of refusals: scope (403) before the body (422)
    bad = await client.post(PUBLISH, headers={"X-API-Key": world.read_key}, json=body(pid, "guardrails: 1\n"))
    assert bad.status_code == 403
    # one version, one event: every refusal wrote nothing
    assert await _count(sessions, OutboxEvent, OutboxEvent.subject == f"policy.published.v1.{pid}") == 1


async def test_manual_review_binds_policies_as_prompts(client, world, sessions):
    w = {"X-API-Key": world.write_key}
    rid = world.review.id
    subject = f"policy.published.v1.{rid}"
    assert (await client.post(PUBLISH, headers=w, json=body(rid))).status_code == 403  # no approver tag
    direct = await client.post(
        "/policies/default/proposals", headers=w, json={"project_id": world.direct.id, "yaml": POLICY}
    )
    assert direct.status_code == 422 and "publishes directly" in direct.text
    invalid = await client.post(
        "/policies/default/proposals", headers=w, json={"project_id": rid, "yaml": "guardrails:\n  nope: 1\n"}
    )
    assert invalid.status_code == 422 and invalid.json()["error"]["details"]["path"] == "guardrails.nope"
    assert await _count(sessions, PolicyProposal) == 0
    carol = await client.post(
        "/policies/default/proposals",
        headers={"X-API-Key": world.carol_key},
        json={"project_id": rid, "yaml": POLICY},
    )
    assert carol.status_code == 403
    made = await client.post(
        "/policies/default/proposals",
        headers=w,
        json={"project_id": rid, "yaml": POLICY, "commit_message": "pii"},
    )
    assert made.status_code == 201, made.text
    p = made.json()
    assert p["status"] == "pending" and p["base_version"] is None and p["policy_name"] == "default"
    queue = await client.get("/policy-reviews", params={"project_id": rid}, headers=w)
    assert [x["id"] for x in queue.json()] == [p["id"]]
    assert (await client.get("/prompt-reviews", params={"project_id": rid}, headers=w)).json() == []
    assert (
        await client.get(f"/prompt-reviews/{p['id']}", params={"project_id": rid}, headers=w)
    ).status_code == 404

    decide = {"project_id": rid, "comment": "fine"}
    assert (
        await client.post(f"/policy-reviews/{p['id']}/approve", headers=w, json=decide)
    ).status_code == 403
    assert await _count(sessions, OutboxEvent, OutboxEvent.subject == subject) == 0
    async with sessions() as s:
        await identity.grant_tag(s, rid, world.alice.id)
        await s.commit()
    no_comment = await client.post(f"/policy-reviews/{p['id']}/reject", headers=w, json={"project_id": rid})
    assert no_comment.status_code == 422
    approved = await client.post(f"/policy-reviews/{p['id']}/approve", headers=w, json=decide)
    assert approved.status_code == 200, approved.text
    published = approved.json()["published"]
    assert published["version"] == 1 and published["yaml"] == POLICY and published["commit_message"] == "pii"
    assert approved.headers["ETag"] == f'"1-{published["sha256"]}"'
    again = await client.post(f"/policy-reviews/{p['id']}/approve", headers=w, json=decide)
    assert again.status_code == 422 and "already approved" in again.text
    async with sessions() as s:
        [event] = (
            await s.execute(select(OutboxEvent.payload).where(OutboxEvent.subject == subject))
        ).scalars()
    assert json.loads(event)["version"] == 1  # the approval is the one activation: one event
    read = await client.get(READ, params={"project_id": rid, "policy_name": "default"}, headers=w)
    assert read.json()["version"] == 1
    # losing the tag takes effect on the next request
    async with sessions() as s:
        await identity.revoke_tag(s, rid, world.alice.id)
        await s.commit()
    assert (await client.post(PUBLISH, headers=w, json=body(rid))).status_code == 403
