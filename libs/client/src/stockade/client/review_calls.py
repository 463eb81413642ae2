"""What each prompt and skill review call sends and how its answer is read: the Manual review queue of a project
(the console's review page); :mod:`~stockade.client.policy_calls` uses the same two builders for policies. Shared by
the sync and the async client."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import httpx
from pydantic import BaseModel, TypeAdapter

from stockade.client.calls import Call, _model, _segment
from stockade.client.models import PromptDecision, PromptProposal, SkillDecision, SkillProposal

P = TypeVar("P", bound=BaseModel)
D = TypeVar("D", bound=BaseModel)


def listing(
    kind: str, parse: Callable[[httpx.Response], list[P]], project_id: str, status: str
) -> Call[list[P]]:
    """The project's ``kind`` proposals with ``status`` (pending: the queue, oldest first; decided: newest first)."""
    return Call(
        "GET",
        f"/{kind}-reviews",
        parse,
        params={"project_id": project_id, "status": status, "limit": "200"},
        what=f"{kind} proposals of project {project_id!r}",
    )


def decision(
    kind: str,
    approved: Callable[[httpx.Response], D],
    rejected: Callable[[httpx.Response], D],
    project_id: str,
    proposal_id: str,
    verdict: str,
    comment: str | None,
) -> Call[D]:
    """``verdict``: approve (the answer holds the published version) or reject (a comment is required; the answer
    is the proposal, read as a decision with nothing published)."""
    if verdict not in ("approve", "reject"):
        raise ValueError("verdict: approve or reject")
    return Call(
        "POST",
        f"/{kind}-reviews/{_segment(proposal_id)}/{verdict}",
        approved if verdict == "approve" else rejected,
        json={"project_id": project_id, "comment": comment},
        is_read=False,
    )


_PROMPT_PROPOSALS = _model(TypeAdapter(list[PromptProposal]))
_PROMPT_DECISION = _model(TypeAdapter(PromptDecision))
_PROMPT_PROPOSAL = _model(TypeAdapter(PromptProposal))
_SKILL_PROPOSALS = _model(TypeAdapter(list[SkillProposal]))
_SKILL_DECISION = _model(TypeAdapter(SkillDecision))
_SKILL_PROPOSAL = _model(TypeAdapter(SkillProposal))


def list_prompt_proposals(project_id: str, status: str) -> Call[list[PromptProposal]]:
    return listing("prompt", _PROMPT_PROPOSALS, project_id, status)


def decide_prompt_proposal(
    project_id: str, proposal_id: str, verdict: str, comment: str | None
) -> Call[PromptDecision]:
    def rejected(response: httpx.Response) -> PromptDecision:
        return PromptDecision(proposal=_PROMPT_PROPOSAL(response))

    return decision("prompt", _PROMPT_DECISION, rejected, project_id, proposal_id, verdict, comment)


def list_skill_proposals(project_id: str, status: str) -> Call[list[SkillProposal]]:
    return listing("skill", _SKILL_PROPOSALS, project_id, status)


def decide_skill_proposal(
    project_id: str, proposal_id: str, verdict: str, comment: str | None
) -> Call[SkillDecision]:
    def rejected(response: httpx.Response) -> SkillDecision:
        return SkillDecision(proposal=_SKILL_PROPOSAL(response))

    return decision("skill", _SKILL_DECISION, rejected, project_id, proposal_id, verdict, comment)
