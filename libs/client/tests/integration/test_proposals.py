"""The Manual review calls of both clients on the real prompt-api (PostgreSQL, NATS): a proposal of each kind
(prompt, skill, guardrail policy) is listed in its own queue, approved by an approver into the next active version
or rejected with a comment, and a proposer without the approver tag cannot decide it."""

import httpx
import pytest

from stockade.client import (
    AsyncStockadeClient,
    ClientSettings,
    PermissionDeniedError,
    StockadeClient,
    ValidationError,
)

SKILL_MD = (
    "---\nname: triage\ndescription: Sort incoming tickets by urgency.\n---\n# Triage\n\nRead {text}.\n"
)
POLICY = "guardrails:\n  checks:\n    pii:\n      enabled: false\n"


def propose(world, key: str, path: str, body: dict) -> str:
    """Proposals of prompts and skills are made by the console and CLI over HTTP; the client decides them."""
    answer = httpx.post(f"{world.base_url}{path}", headers={"X-API-Key": key}, json=body, timeout=10)
    assert answer.status_code == 201, answer.text
    return str(answer.json()["id"])


def test_prompt_proposals_are_listed_approved_and_rejected(world, review_project):
    p = review_project.project_id
    body = {"project_id": p, "content": "You triage tickets.", "commit_message": "first"}
    first = propose(world, review_project.proposer_key, "/prompts/triage/proposals", body)
    second = propose(
        world, review_project.proposer_key, "/prompts/triage/proposals", {**body, "content": "Nope."}
    )
    settings = ClientSettings(base_url=world.base_url)
    with StockadeClient(review_project.proposer_key, settings) as proposer:
        pending = proposer.list_prompt_proposals(p)
        assert [(x.id, x.prompt_name, x.status) for x in pending] == [
            (first, "triage", "pending"),
            (second, "triage", "pending"),
        ]  # the queue: oldest first
        with pytest.raises(PermissionDeniedError, match="approver"):
            proposer.decide_prompt_proposal(p, first, "approve")
    with StockadeClient(review_project.approver_key, settings) as approver:
        decided = approver.decide_prompt_proposal(p, first, "approve", "fine")
        assert decided.proposal.status == "approved" and decided.published is not None
        assert decided.published.version == 1 and decided.published.content == "You triage tickets."
        with pytest.raises(ValidationError):
            approver.decide_prompt_proposal(p, second, "reject")  # a rejection needs a comment
        rejected = approver.decide_prompt_proposal(p, second, "reject", "too short")
        assert rejected.published is None and rejected.proposal.comment == "too short"
        assert approver.list_prompt_proposals(p) == []
        assert {x.id for x in approver.list_prompt_proposals(p, "approved")} == {first}
        assert [x.version for x in approver.list_prompt_proposals(p, "approved")] == [1]
        assert {x.id for x in approver.list_prompt_proposals(p, "rejected")} == {second}
        assert approver.list_skill_proposals(p) == []  # separate queues


def test_skill_proposals_are_listed_and_approved(world, review_project):
    p = review_project.project_id
    body = {"project_id": p, "skill_md": SKILL_MD, "files": {"references/urgency.md": "P1 first.\n"}}
    proposal = propose(world, review_project.proposer_key, "/skills/triage/proposals", body)
    with StockadeClient(review_project.approver_key, ClientSettings(base_url=world.base_url)) as approver:
        [pending] = approver.list_skill_proposals(p)
        assert pending.id == proposal and pending.skill_name == "triage"
        assert [f.path for f in pending.files] == ["references/urgency.md"]
        decided = approver.decide_skill_proposal(p, proposal, "approve")
        assert decided.published is not None and decided.published.version == 1
        assert approver.get_skill_file(p, "triage", "references/urgency.md") == b"P1 first.\n"
        assert approver.list_prompt_proposals(p) == [] and approver.list_policy_proposals(p) == []


async def test_policy_proposals_through_the_async_client(world, review_project):
    p = review_project.project_id
    settings = ClientSettings(base_url=world.base_url)
    async with AsyncStockadeClient(review_project.proposer_key, settings) as proposer:
        proposal = await proposer.propose_policy(p, "agent", POLICY, "no PII check")
        assert proposal.status == "pending" and proposal.base_version is None
        with pytest.raises(PermissionDeniedError):
            await proposer.publish_policy(p, "agent", POLICY)  # Manual review: publishing needs the tag
    async with AsyncStockadeClient(review_project.approver_key, settings) as approver:
        assert [x.id for x in await approver.list_policy_proposals(p)] == [proposal.id]
        decided = await approver.decide_policy_proposal(p, proposal.id, "approve")
        assert decided.published is not None and decided.published.version == 1
        assert (await approver.get_policy(p, "agent")).yaml == POLICY
        assert [x.version for x in await approver.list_policy_proposals(p, "approved")] == [1]
    # an organisation member outside the project sees none of it (prompt-api's rule: project member)
    async with AsyncStockadeClient(world.carol_key, settings) as outsider:
        with pytest.raises(PermissionDeniedError):
            await outsider.list_policy_proposals(p)
