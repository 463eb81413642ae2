"""Manual review of prompt versions: propose, list the queue, approve (publishes), reject with a comment.

Who may do what, always from current rows (``stockade.identity``):

- propose: a write-scope key whose owner is a member of a Manual review project (the approver tag is not needed:
  that is the point of proposing);
- list proposals: project membership, as for every listing;
- approve or reject: what publishing needs (write scope, membership, the approver tag).

Approval claims the pending row and writes the version in one transaction, so two approvers racing produce one
version and the other gets "already decided".
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from stockade.identity import Flow, KeyPrincipal, can_list, project_access
from stockade.identity.db_types import new_id, utcnow
from stockade.prompt_api import prompts
from stockade.prompt_api.errors import AlreadyDecided, Forbidden, InvalidContent, NotFound, NotUnderReview
from stockade.prompt_api.schemas import (
    PromptProposalCreate,
    PromptProposalPublic,
    PromptVersionPublic,
    ReviewDecision,
)
from stockade.prompt_api.settings import LimitSettings
from stockade.prompt_api.tables import Prompt, PromptProposal

STATUSES = ("pending", "approved", "rejected")


def _public(p: PromptProposal) -> PromptProposalPublic:
    return PromptProposalPublic(
        id=p.id,
        project_id=p.project_id,
        prompt_name=p.prompt_name,
        status=p.status,
        content=p.content,
        config=p.config,
        sha256=p.sha256,
        commit_message=p.commit_message,
        base_version=p.base_version,
        proposed_by=p.proposed_by,
        proposed_at=p.proposed_at,
        decided_by=p.decided_by,
        decided_at=p.decided_at,
        comment=p.comment,
        version=p.version,
    )


async def propose(
    sessions: async_sessionmaker[AsyncSession],
    principal: KeyPrincipal,
    prompt_name: str,
    body: PromptProposalCreate,
    limits: LimitSettings,
) -> PromptProposalPublic:
    content: Any = body.content if isinstance(body.content, str) else [m.model_dump() for m in body.content]
    prompts.check_size(content, body.config, limits)
    async with sessions() as session, session.begin():
        access = await project_access(session, principal.owner_id, body.project_id)
        if not can_list(access).allowed:
            raise Forbidden("the key's owner is not a member of this project")
        if access.flow is not Flow.MANUAL_REVIEW:
            raise NotUnderReview(
                "this project publishes directly: publish the version instead of proposing it"
            )
        active = (
            await session.execute(
                select(Prompt.active_version).where(
                    Prompt.project_id == body.project_id, Prompt.name == prompt_name
                )
            )
        ).scalar_one_or_none()
        row = PromptProposal(
            id=new_id(),
            project_id=body.project_id,
            prompt_name=prompt_name,
            content=content,
            config=body.config,
            sha256=prompts.content_sha256(content, body.config),
            commit_message=body.commit_message,
            base_version=active,
            status="pending",
            proposed_by=principal.owner_id,
            proposed_at=utcnow(),
        )
        session.add(row)
        await session.flush()
        return _public(row)


async def _member_or_403(session: AsyncSession, principal: KeyPrincipal, project_id: str) -> None:
    if not can_list(await project_access(session, principal.owner_id, project_id)).allowed:
        raise Forbidden("the key's owner is not a member of this project")


async def list_proposals(
    session: AsyncSession, principal: KeyPrincipal, project_id: str, status: str, limit: int
) -> list[PromptProposalPublic]:
    """The project's proposals with ``status``: pending ones oldest first (a queue), decided ones newest first."""
    await _member_or_403(session, principal, project_id)
    order = (
        (PromptProposal.proposed_at, PromptProposal.id)
        if status == "pending"
        else (PromptProposal.decided_at.desc(), PromptProposal.id.desc())
    )
    rows = (
        await session.execute(
            select(PromptProposal)
            .where(PromptProposal.project_id == project_id, PromptProposal.status == status)
            .order_by(*order)
            .limit(limit)
        )
    ).scalars()
    return [_public(p) for p in rows]


async def get_proposal(
    session: AsyncSession, principal: KeyPrincipal, project_id: str, proposal_id: str
) -> PromptProposalPublic:
    await _member_or_403(session, principal, project_id)
    row = await session.get(PromptProposal, proposal_id)
    if row is None or row.project_id != project_id:
        raise NotFound("no such proposal in this project")
    return _public(row)


async def _claim(
    session: AsyncSession, principal: KeyPrincipal, proposal_id: str, decision: ReviewDecision, status: str
) -> PromptProposal:
    """Move a pending proposal of the project to ``status``; refused when it is unknown or already decided."""
    claimed = (
        await session.execute(
            update(PromptProposal)
            .where(
                PromptProposal.id == proposal_id,
                PromptProposal.project_id == decision.project_id,
                PromptProposal.status == "pending",
            )
            .values(
                status=status, decided_by=principal.owner_id, decided_at=utcnow(), comment=decision.comment
            )
            .returning(PromptProposal.id)
        )
    ).scalar_one_or_none()
    row = await session.get(PromptProposal, proposal_id, populate_existing=True)
    if row is None or row.project_id != decision.project_id:
        raise NotFound("no such proposal in this project")
    if claimed is None:
        raise AlreadyDecided(f"this proposal was already {row.status}")
    return row


async def approve(
    sessions: async_sessionmaker[AsyncSession],
    principal: KeyPrincipal,
    proposal_id: str,
    decision: ReviewDecision,
) -> tuple[PromptProposalPublic, PromptVersionPublic]:
    """Publish the proposal as the prompt's next, active version (publish rules apply), in one transaction."""
    async with sessions() as session, session.begin():
        await prompts.authorise_publish(session, principal, decision.project_id)
        row = await _claim(session, principal, proposal_id, decision, "approved")
        message = row.commit_message or f"approved proposal {row.id}"
        published = await prompts.insert_version(
            session, principal.owner_id, row.project_id, row.prompt_name, row.content, row.config, message
        )
        row.version = published.version
        await session.flush()
        return _public(row), published


async def reject(
    sessions: async_sessionmaker[AsyncSession],
    principal: KeyPrincipal,
    proposal_id: str,
    decision: ReviewDecision,
) -> PromptProposalPublic:
    """Reject with a comment (required: the author needs to know why); publish rules apply."""
    if not (decision.comment or "").strip():
        raise InvalidContent("a rejection needs a comment saying why")
    async with sessions() as session, session.begin():
        await prompts.authorise_publish(session, principal, decision.project_id)
        row = await _claim(session, principal, proposal_id, decision, "rejected")
        return _public(row)
