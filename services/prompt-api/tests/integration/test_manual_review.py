"""Manual review: a member proposes, an approver approves (the next active version) or rejects with a comment;
the same scope, membership and approver-tag rules as publishing, from current rows."""

import pytest
from sqlalchemy import func, select

from stockade import identity
from stockade.prompt_api.tables import OutboxEvent

PUBLISH = "/prompts/active-prompt-version"


def proposal(project_id, content="Hello, reviewed", **extra):
    return {"project_id": project_id, "content": content, **extra}


async def _events(sessions):
    async with sessions() as s:
        return (await s.execute(select(func.count()).select_from(OutboxEvent))).scalar_one()


async def approve_once_tagged(client, world, sessions, path, decide):
    """Alice approves at ``path``: refused (403) without the approver tag, then, with it, approved with one
    event enqueued; the approval's body."""
    w = {"X-API-Key": world.write_key}
    assert (await client.post(path, headers=w, json=decide)).status_code == 403
    async with sessions() as s:
        await identity.grant_tag(s, world.review.id, world.alice.id)
        await s.commit()
    events_before = await _events(sessions)
    approved = await client.post(path, headers=w, json=decide)
    assert approved.status_code == 200, approved.text
    assert await _events(sessions) == events_before + 1
    return approved.json()


async def test_propose_then_approve_publishes_the_next_active_version(client, world, sessions):
    w = {"X-API-Key": world.write_key}
    async with sessions() as s:
        await identity.grant_tag(s, world.review.id, world.alice.id)
        await s.commit()
    first = await client.post(
        PUBLISH, headers=w, json={"project_id": world.review.id, "prompt_name": "greeting", "content": "v1"}
    )
    assert first.status_code == 201
    async with sessions() as s:
        await identity.revoke_tag(s, world.review.id, world.alice.id)
        await s.commit()
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
    body = await approve_once_tagged(client, world, sessions, f"/prompt-reviews/{p['id']}/approve", decide)
    assert body["published"]["version"] == 2 and body["published"]["content"] == "Hello, reviewed"
    assert body["published"]["commit_message"] == "warmer"
    assert body["proposal"]["status"] == "approved" and body["proposal"]["version"] == 2
    assert body["proposal"]["comment"] == "fine" and body["proposal"]["decided_by"] == world.alice.id
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


SKILL_MD = "---\nname: triage\ndescription: Sort incoming tickets.\n---\n# Triage\n"


def skill_proposal(project_id, md=SKILL_MD, **extra):
    return {"project_id": project_id, "skill_md": md, **extra}


async def test_a_skill_proposal_is_approved_into_the_next_active_version(client, world, sessions):
    w = {"X-API-Key": world.write_key}
    publish = {"project_id": world.review.id, "skill_name": "triage", "skill_md": SKILL_MD}
    # without the tag alice's publish is refused (spec 7: 403), but she can propose
    assert (await client.post("/skills/active-version", headers=w, json=publish)).status_code == 403
    async with sessions() as s:
        await identity.grant_tag(s, world.review.id, world.alice.id)
        await s.commit()
    assert (await client.post("/skills/active-version", headers=w, json=publish)).status_code == 201
    async with sessions() as s:
        await identity.revoke_tag(s, world.review.id, world.alice.id)
        await s.commit()
    files = {"references/levels.md": "# Levels\n", "logo.bin": {"base64": "AAEC"}}
    made = await client.post(
        "/skills/triage/proposals",
        headers=w,
        json=skill_proposal(world.review.id, SKILL_MD + "More.\n", files=files, commit_message="levels"),
    )
    assert made.status_code == 201, made.text
    p = made.json()
    assert p["status"] == "pending" and p["base_version"] == 1 and p["version"] is None
    assert [f["path"] for f in p["files"]] == ["logo.bin", "references/levels.md"]
    queue = await client.get("/skill-reviews", params={"project_id": world.review.id}, headers=w)
    assert [x["id"] for x in queue.json()] == [p["id"]] and queue.json()[0]["files"] == p["files"]
    # the prompt queue is its own
    assert (
        await client.get("/prompt-reviews", params={"project_id": world.review.id}, headers=w)
    ).json() == []
    decide = {"project_id": world.review.id, "comment": "good"}
    body = await approve_once_tagged(client, world, sessions, f"/skill-reviews/{p['id']}/approve", decide)
    assert body["published"]["version"] == 2 and body["published"]["sha256"] == p["sha256"]
    assert body["published"]["commit_message"] == "levels"
    assert body["proposal"]["status"] == "approved" and body["proposal"]["version"] == 2
    assert body["proposal"]["decided_by"] == world.alice.id and body["proposal"]["comment"] == "good"
    r = {"project_id": world.review.id}
    md = await client.get("/skills/triage/SKILL.md", params=r, headers=w)
    assert md.text == SKILL_MD + "More.\n"
    logo = await client.get("/skills/triage/logo.bin", params=r, headers=w)
    assert logo.content == b"\x00\x01\x02"
    detail = (await client.get("/skills/triage", params=r, headers=w)).json()
    assert detail["active_version"] == 2 and detail["sha256"] == p["sha256"]
    again = await client.post(f"/skill-reviews/{p['id']}/reject", headers=w, json=decide)
    assert again.status_code == 422 and "already approved" in again.text
    done = await client.get("/skill-reviews", params={**r, "status": "approved"}, headers=w)
    assert [x["id"] for x in done.json()] == [p["id"]]


@pytest.mark.parametrize("noun, name", [("prompt", "greeting"), ("skill", "triage")])
async def test_a_rejection_needs_a_comment_and_publishes_nothing(client, world, sessions, noun, name):
    w = {"X-API-Key": world.write_key}
    body = proposal(world.review.id) if noun == "prompt" else skill_proposal(world.review.id)
    p = (await client.post(f"/{noun}s/{name}/proposals", headers=w, json=body)).json()
    assert p["base_version"] is None  # a new one
    async with sessions() as s:
        await identity.grant_tag(s, world.review.id, world.alice.id)
        await s.commit()
    reject = f"/{noun}-reviews/{p['id']}/reject"
    no_comment = await client.post(reject, headers=w, json={"project_id": world.review.id})
    assert no_comment.status_code == 422
    rejected = await client.post(reject, headers=w, json={"project_id": world.review.id, "comment": "vague"})
    assert rejected.status_code == 200
    assert rejected.json()["status"] == "rejected" and rejected.json()["comment"] == "vague"
    listed = await client.get(f"/{noun}s", params={"project_id": world.review.id}, headers=w)
    assert listed.json() == []  # nothing was published
    one = await client.get(f"/{noun}-reviews/{p['id']}", params={"project_id": world.review.id}, headers=w)
    assert one.json()["status"] == "rejected"


async def test_who_may_propose_a_skill_and_what_is_refused(client, world):
    w, r = {"X-API-Key": world.write_key}, {"X-API-Key": world.read_key}
    review = world.review.id
    assert (
        await client.post("/skills/triage/proposals", headers=r, json=skill_proposal(review))
    ).status_code == 403
    direct = await client.post("/skills/triage/proposals", headers=w, json=skill_proposal(world.direct.id))
    assert direct.status_code == 422 and "publishes directly" in direct.text
    carol = {"X-API-Key": world.carol_key}
    assert (
        await client.post("/skills/triage/proposals", headers=carol, json=skill_proposal(review))
    ).status_code == 403
    assert (
        await client.get("/skill-reviews", params={"project_id": review}, headers=carol)
    ).status_code == 403
    assert (await client.get("/skill-reviews", params={"project_id": review})).status_code == 401
    # the Agent Skills rules hold as for a publish: the name must match, paths are checked
    mismatch = await client.post("/skills/other/proposals", headers=w, json=skill_proposal(review))
    assert mismatch.status_code == 422
    bad_path = await client.post(
        "/skills/triage/proposals", headers=w, json=skill_proposal(review, files={"../x": "no"})
    )
    assert bad_path.status_code == 422
    assert (
        await client.post("/skills/Bad_Name/proposals", headers=w, json=skill_proposal(review))
    ).status_code == 400
    p = (await client.post("/skills/triage/proposals", headers=w, json=skill_proposal(review))).json()
    other = await client.get(f"/skill-reviews/{p['id']}", params={"project_id": world.direct.id}, headers=w)
    assert other.status_code == 404
    # a prompt proposal's id is not a skill proposal
    q = (await client.post("/prompts/g/proposals", headers=w, json=proposal(review))).json()
    assert (
        await client.get(f"/skill-reviews/{q['id']}", params={"project_id": review}, headers=w)
    ).status_code == 404
