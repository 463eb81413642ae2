"""Manual review routes (beyond the spec), one set for each kind reviewed: propose a prompt, skill or policy version,
the project's queue, approve, reject (``stockade.prompt_api.reviews``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse

from stockade.prompt_api import paging, policy_review, prompts, review_kinds, reviews
from stockade.prompt_api.deps import ReaderDep, SessionDep, WritingDep
from stockade.prompt_api.responses import (
    DECISION_BODY,
    POLICY_PROPOSAL_BODY,
    PROPOSAL_BODY,
    READ,
    SKILL_PROPOSAL_BODY,
    SKILL_WRITE,
    WRITE,
)
from stockade.prompt_api.routes.policies import etag_header as _policy_etag
from stockade.prompt_api.schemas import (
    PolicyName,
    PromptName,
    PromptVersionPublic,
    ReviewDecision,
    SkillVersionPublic,
)
from stockade.prompt_api.skill_format import check_skill_name
from stockade.runtime.storable import StorableStr

router = APIRouter(tags=["reviews"])


async def _prompt_name(prompt_name: PromptName) -> str:
    return prompt_name


async def _policy_name(policy_name: PolicyName) -> str:
    return policy_name


async def _skill_name(skill_name: str) -> str:
    return check_skill_name(skill_name)


def _prompt_etag(published: PromptVersionPublic) -> dict[str, str]:
    return {"ETag": prompts.etag(published.version, published.sha256)}


def _no_headers(published: SkillVersionPublic) -> None:
    return None


def _add_routes(
    kind: reviews.ReviewKind[Any, Any, Any, Any],
    name_dep: Callable[..., Awaitable[str]],
    propose_errors: dict[int | str, dict[str, Any]],
    propose_body: dict[str, Any],
    approved_headers: Callable[[Any], dict[str, str] | None],
    qualified: bool,
) -> None:
    """The kind's five routes. ``name_dep`` is the dependency reading (and checking) the name in the propose path;
    ``qualified``: operation names and descriptions name the kind (the prompt routes came first, without)."""
    noun = kind.noun
    op, what, whose = (f"{noun}_", f"{noun} ", f"{noun}'s ") if qualified else ("", "", "")
    q = f"/{noun}-reviews"

    @router.post(
        f"/{kind.collection()}/{{{noun}_name}}/proposals",
        name=f"propose_{noun}_version",
        status_code=201,
        response_model=kind.public,
        responses=propose_errors,
        openapi_extra=propose_body,
        description=f"Propose a {what}version on a Manual review project: pending until an approver decides "
        "(write scope, member).",
    )
    async def propose(request: Request, w: WritingDep, name: str = Depends(name_dep)) -> JSONResponse:
        body = await w.body(request, kind.create)
        proposed = await reviews.propose(kind, w.sessions, w.principal, name, body, w.settings.limits)
        return JSONResponse(proposed.model_dump(mode="json"), status_code=201)

    @router.get(
        q,
        name=f"list_{op}proposals",
        response_model=list[kind.public],  # type: ignore[name-defined]  # a model chosen at run time
        responses=READ,
        description=f"The project's {what}proposals: pending ones oldest first (the queue), decided ones "
        "newest first.",
    )
    async def list_proposals(
        principal: ReaderDep,
        session: SessionDep,
        project_id: StorableStr,
        status: Literal["pending", "approved", "rejected"] = "pending",
        limit: paging.Limit = paging.DEFAULT_LIMIT,
    ) -> Any:
        return await reviews.list_proposals(kind, session, principal, project_id, status, limit)

    @router.get(q + "/{proposal_id}", name=f"get_{op}proposal", response_model=kind.public, responses=READ)
    async def get_proposal(
        principal: ReaderDep,
        session: SessionDep,
        proposal_id: StorableStr,
        project_id: Annotated[StorableStr, Query()],
    ) -> Any:
        return await reviews.get_proposal(kind, session, principal, project_id, proposal_id)

    @router.post(
        q + "/{proposal_id}/approve",
        name=f"approve_{op}proposal",
        description=f"Publish the proposal as the {whose}next active version (write scope, member, approver tag).",
        responses=WRITE,
        openapi_extra=DECISION_BODY,
    )
    async def approve_proposal(request: Request, proposal_id: StorableStr, w: WritingDep) -> JSONResponse:
        decision = await w.body(request, ReviewDecision)
        proposal, published = await reviews.approve(
            kind, w.sessions, w.relay, w.principal, proposal_id, decision
        )
        return JSONResponse(
            {"proposal": proposal.model_dump(mode="json"), "published": published.model_dump(mode="json")},
            headers=approved_headers(published),
        )

    @router.post(
        q + "/{proposal_id}/reject",
        name=f"reject_{op}proposal",
        response_model=kind.public,
        responses=WRITE,
        openapi_extra=DECISION_BODY,
    )
    async def reject_proposal(request: Request, proposal_id: StorableStr, w: WritingDep) -> Any:
        """Reject with a comment (required); same rules as approving."""
        decision = await w.body(request, ReviewDecision)
        return await reviews.reject(kind, w.sessions, w.principal, proposal_id, decision)


_add_routes(review_kinds.PROMPTS, _prompt_name, WRITE, PROPOSAL_BODY, _prompt_etag, qualified=False)
_add_routes(review_kinds.SKILLS, _skill_name, SKILL_WRITE, SKILL_PROPOSAL_BODY, _no_headers, qualified=True)
_add_routes(policy_review.POLICIES, _policy_name, WRITE, POLICY_PROPOSAL_BODY, _policy_etag, qualified=True)
