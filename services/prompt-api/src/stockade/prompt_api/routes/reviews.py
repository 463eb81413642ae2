"""Manual review routes (beyond the spec): propose a prompt version, the project's queue, approve, reject."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from stockade.prompt_api import paging, prompts, reviews
from stockade.prompt_api.body import parse_body
from stockade.prompt_api.deps import ReaderDep, RelayDep, SessionDep, SessionsDep, SettingsDep, WriterDep
from stockade.prompt_api.responses import DECISION_BODY, PROPOSAL_BODY, READ, WRITE
from stockade.prompt_api.schemas import PromptName, PromptProposalCreate, PromptProposalPublic, ReviewDecision
from stockade.runtime.storable import StorableStr

router = APIRouter(tags=["reviews"])


@router.post(
    "/prompts/{prompt_name}/proposals",
    status_code=201,
    response_model=PromptProposalPublic,
    responses=WRITE,
    openapi_extra=PROPOSAL_BODY,
)
async def propose_prompt_version(
    request: Request,
    prompt_name: PromptName,
    principal: WriterDep,
    sessions: SessionsDep,
    settings: SettingsDep,
) -> JSONResponse:
    """Propose a version on a Manual review project: pending until an approver decides (write scope, member)."""
    body = await parse_body(request, PromptProposalCreate, settings.limits.max_body_bytes)
    proposed = await reviews.propose(sessions, principal, prompt_name, body, settings.limits)
    return JSONResponse(proposed.model_dump(mode="json"), status_code=201)


@router.get("/prompt-reviews", response_model=list[PromptProposalPublic], responses=READ)
async def list_proposals(
    principal: ReaderDep,
    session: SessionDep,
    project_id: StorableStr,
    status: Literal["pending", "approved", "rejected"] = "pending",
    limit: paging.Limit = paging.DEFAULT_LIMIT,
) -> list[PromptProposalPublic]:
    """The project's proposals: pending ones oldest first (the queue), decided ones newest first."""
    return await reviews.list_proposals(session, principal, project_id, status, limit)


@router.get("/prompt-reviews/{proposal_id}", response_model=PromptProposalPublic, responses=READ)
async def get_proposal(
    principal: ReaderDep,
    session: SessionDep,
    proposal_id: StorableStr,
    project_id: Annotated[StorableStr, Query()],
) -> PromptProposalPublic:
    return await reviews.get_proposal(session, principal, project_id, proposal_id)


@router.post("/prompt-reviews/{proposal_id}/approve", responses=WRITE, openapi_extra=DECISION_BODY)
async def approve_proposal(
    request: Request,
    proposal_id: StorableStr,
    principal: WriterDep,
    sessions: SessionsDep,
    settings: SettingsDep,
    relay: RelayDep,
) -> JSONResponse:
    """Publish the proposal as the next active version (write scope, member, approver tag)."""
    decision = await parse_body(request, ReviewDecision, settings.limits.max_body_bytes)
    proposal, published = await reviews.approve(sessions, principal, proposal_id, decision)
    if relay is not None:
        relay.wake()
    return JSONResponse(
        {"proposal": proposal.model_dump(mode="json"), "published": published.model_dump(mode="json")},
        headers={"ETag": prompts.etag(published.version, published.sha256)},
    )


@router.post(
    "/prompt-reviews/{proposal_id}/reject",
    response_model=PromptProposalPublic,
    responses=WRITE,
    openapi_extra=DECISION_BODY,
)
async def reject_proposal(
    request: Request,
    proposal_id: StorableStr,
    principal: WriterDep,
    sessions: SessionsDep,
    settings: SettingsDep,
) -> PromptProposalPublic:
    """Reject with a comment (required); same rules as approving."""
    decision = await parse_body(request, ReviewDecision, settings.limits.max_body_bytes)
    return await reviews.reject(sessions, principal, proposal_id, decision)
