"""Manual review: a member proposes, an approver approves (the next active version) or rejects with a comment;
the same scope, membership and approver-tag rules as publishing, from current rows."""

from sqlalchemy import func, select

from stockade import identity
from stockade.prompt_api.tables import OutboxEvent

PUBLISH = "/prompts/active-prompt-version"


def proposal(project_id, content="Hello, reviewed", **extra):
    return {"project_id": project_id, "content": content, **extra}


async def test_propose_then_approve_publishes_the_next_active_version(client, world, sessions):
    w = {"X-API-Key": world.write_key}
    async with sessions() as s:
        await identity.grant_tag(s, world.review.id, world.alice.id)
    first = await client.post(
        PUBLISH, headers=w, json={"project_id": world.review.id, "prompt_name": "greeting", "content": "v1"}
    )
    assert first.status_code == 201
    async with sessions() as s:
        await identity.revoke_tag(s, world.review.id, world.alice.id)
    # without the tag alice cannot publish, but she can propose
    refused = await client.post(
        PUBLISH, headers=w, json={"project_id": world.review.id, "prompt_name": "greeting", "content": "v2"}
    )
    assert refused.status_code == 403
    made = await client.post(
        "/prompts/greeting/proposals", headers=w, json=proposal(world.review.id, commit_message="warmer")
    )
    assert made.status_code == 201, made.text
    p = made.json()
    assert p["status"] == "pending" and p["base_version"] == 1 and p["version"] is None
    queue = await client.get("/prompt-reviews", params={"project_id": world.review.id}, headers=w)
    assert [x["id"] for x in queue.json()] == [p["id"]]
    # approving needs the approver tag
    decide = {"project_id": world.review.id, "comment": "fine"}
    assert (
        await client.post(f"/prompt-reviews/{p['id']}/approve", headers=w, json=decide)
    ).status_code == 403
    async with sessions() as s:
        await identity.grant_tag(s, world.review.id, world.alice.id)
        events_before = (await s.execute(select(func.count()).select_from(OutboxEvent))).scalar_one()
    approved = await client.post(f"/prompt-reviews/{p['id']}/approve", headers=w, json=decide)
    assert approved.status_code == 200, approved.text
    body = approved.json()
    assert body["published"]["version"] == 2 and body["published"]["content"] == "Hello, reviewed"
    assert body["published"]["commit_message"] == "warmer"
    assert body["proposal"]["status"] == "approved" and body["proposal"]["version"] == 2
    assert body["proposal"]["comment"] == "fine" and body["proposal"]["decided_by"] == world.alice.id
    async with sessions() as s:
        assert (
            await s.execute(select(func.count()).select_from(OutboxEvent))
        ).scalar_one() == events_before + 1
    read = await client.get(
        PUBLISH, params={"api_key": world.read_key, "project_id": world.review.id, "prompt_name": "greeting"}
    )
    assert read.json()["version"] == 2
    # decided once: a second decision is refused, and the queue is empty
    again = await client.post(f"/prompt-reviews/{p['id']}/reject", headers=w, json=decide)
    assert again.status_code == 422 and "already approved" in again.text
    assert (
        await client.get("/prompt-reviews", params={"project_id": world.review.id}, headers=w)
    ).json() == []
    done = await client.get(
        "/prompt-reviews", params={"project_id": world.review.id, "status": "approved"}, headers=w
    )
    assert [x["id"] for x in done.json()] == [p["id"]]


async def test_reject_needs_a_comment_and_the_tag_and_publishes_nothing(client, world, sessions):
    w = {"X-API-Key": world.write_key}
    p = (await client.post("/prompts/greeting/proposals", headers=w, json=proposal(world.review.id))).json()
    async with sessions() as s:
        await identity.grant_tag(s, world.review.id, world.alice.id)
    no_comment = await client.post(
        f"/prompt-reviews/{p['id']}/reject", headers=w, json={"project_id": world.review.id}
    )
    assert no_comment.status_code == 422
    rejected = await client.post(
        f"/prompt-reviews/{p['id']}/reject",
        headers=w,
        json={"project_id": world.review.id, "comment": "too curt"},
    )
    assert rejected.status_code == 200
    assert rejected.json()["status"] == "rejected" and rejected.json()["comment"] == "too curt"
    listed = await client.get("/prompts", params={"project_id": world.review.id}, headers=w)
    assert listed.json() == []  # nothing was published
    one = await client.get(f"/prompt-reviews/{p['id']}", params={"project_id": world.review.id}, headers=w)
    assert one.json()["status"] == "rejected"


async def test_who_may_propose_list_and_decide(client, world):
    w, r = {"X-API-Key": world.write_key}, {"X-API-Key": world.read_key}
    # a read key cannot propose; a direct project takes publishes, not proposals; outsiders get 403
    assert (
        await client.post("/prompts/g/proposals", headers=r, json=proposal(world.review.id))
    ).status_code == 403
    direct = await client.post("/prompts/g/proposals", headers=w, json=proposal(world.direct.id))
    assert direct.status_code == 422 and "publishes directly" in direct.text
    carol = {"X-API-Key": world.carol_key}
    assert (
        await client.post("/prompts/g/proposals", headers=carol, json=proposal(world.review.id))
    ).status_code == 403
    assert (
        await client.get("/prompt-reviews", params={"project_id": world.review.id}, headers=carol)
    ).status_code == 403
    assert (await client.get("/prompt-reviews", params={"project_id": world.review.id})).status_code == 401
    bad_name = await client.post("/prompts/..%2Fx/proposals", headers=w, json=proposal(world.review.id))
    assert bad_name.status_code in (404, 422)
    # a proposal of another project is not found through this one
    p = (await client.post("/prompts/g/proposals", headers=w, json=proposal(world.review.id))).json()
    other = await client.get(f"/prompt-reviews/{p['id']}", params={"project_id": world.direct.id}, headers=w)
    assert other.status_code == 404
