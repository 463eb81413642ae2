"""Manual review, one mechanism for prompt, skill and guardrail policy versions: propose, list the queue, approve
(publishes), reject with a comment. What differs between the kinds is a :class:`ReviewKind` value
(``review_kinds.PROMPTS``, ``review_kinds.SKILLS``, ``policy_review.POLICIES``): the proposals table, how a proposal is
checked and stored, its public view, and how an approved one is published (which also enqueues the kind's event,
``prompt.published.v1``, ``skill.published.v1`` or ``policy.published.v1``).

Who may do what, always from current rows (``stockade.identity``):

- propose: a write-scope key whose owner is a member of a Manual review project (the approver tag is not needed:
  that is the point of proposing);
- list proposals: project membership, as for every listing;
- approve or reject: what publishing needs (write scope, membership, the approver tag).

A proposal is checked (content limits; for skills the Agent Skills format, its files stored with it) when it is
made, so approval publishes exactly what the approver saw. Approval claims the pending row and writes the
version in one transaction, so two approvers racing produce one version and the other gets "already decided".
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from stockade.identity import Flow, KeyPrincipal, can_list, project_access
from stockade.prompt_api import versioning
from stockade.prompt_api.errors import AlreadyDecided, Forbidden, InvalidContent, NotFound, NotUnderReview
from stockade.prompt_api.schemas import (
    PolicyProposalCreate,
    PolicyProposalPublic,
    PolicyVersionPublic,
    PromptProposalCreate,
    PromptProposalPublic,
    PromptVersionPublic,
    ReviewDecision,
    SkillProposalCreate,
    SkillProposalPublic,
    SkillVersionPublic,
)
from stockade.prompt_api.settings import LimitSettings
from stockade.prompt_api.skill_format import ValidFile
from stockade.prompt_api.tables import Policy, PolicyProposal, Prompt, PromptProposal, Skill, SkillProposal
from stockade.runtime.db_types import new_id, utcnow
from stockade.runtime.uow import Waker

STATUSES = ("pending", "approved", "rejected")

RowT = TypeVar("RowT", PromptProposal, SkillProposal, PolicyProposal)
CreateT = TypeVar("CreateT", PromptProposalCreate, SkillProposalCreate, PolicyProposalCreate)
PublicT = TypeVar("PublicT", PromptProposalPublic, SkillProposalPublic, PolicyProposalPublic)
VersionT = TypeVar("VersionT", PromptVersionPublic, SkillVersionPublic, PolicyVersionPublic)


@dataclass(frozen=True)
class Checked:
    """A proposal as checked before any transaction: the kind's own columns, and (skills) its files."""

    columns: dict[str, Any]
    files: list[ValidFile] = field(default_factory=list)


class ReviewKind(ABC, Generic[RowT, CreateT, PublicT, VersionT]):
    """What differs between reviewing prompt versions and skill versions; the functions below do the rest."""

    noun: str  # "prompt" or "skill"
    table: type[RowT]  # the proposals
    subject: type[Prompt] | type[Skill] | type[Policy]  # whose active version a proposal is based on
    create: type[CreateT]  # the body of a proposal
    public: type[PublicT]  # a proposal as answered

    def collection(self) -> str:
        """The path segment of the kind's names (``/prompts/{name}/proposals``)."""
        return f"{self.noun}s"

    @abstractmethod
    def check(self, name: str, body: CreateT, limits: LimitSettings) -> Checked:
        """Before any transaction: the proposal checked as a publish would be (422 or 400 if not)."""

    @abstractmethod
    async def store(self, session: AsyncSession, row: RowT, checked: Checked) -> PublicT:
        """After the new row is flushed: store what else the proposal holds; its public view."""

    @abstractmethod
    async def views(self, session: AsyncSession, rows: Sequence[RowT]) -> list[PublicT]: ...

    @abstractmethod
    async def publish(self, session: AsyncSession, owner_id: str, row: RowT, message: str) -> VersionT:
        """Inside the approving transaction: the next, active version, and its event enqueued."""


def columns_of(row: PromptProposal | SkillProposal | PolicyProposal) -> dict[str, Any]:
    """The row's columns by attribute name: every field of its public view but a skill's files."""
    return {c.key: getattr(row, c.key) for c in row.__mapper__.column_attrs}


async def propose(
    kind: ReviewKind[RowT, CreateT, PublicT, VersionT],
    sessions: async_sessionmaker[AsyncSession],
    principal: KeyPrincipal,
    name: str,
    body: CreateT,
    limits: LimitSettings,
) -> PublicT:
    checked = kind.check(name, body, limits)
    async with versioning.writing(sessions, None) as uow:
        session = uow.session
        access = await project_access(session, principal.owner_id, body.project_id)
        if not can_list(access).allowed:
            raise Forbidden("the key's owner is not a member of this project")
        if access.flow is not Flow.MANUAL_REVIEW:
            raise NotUnderReview(
                "this project publishes directly: publish the version instead of proposing it"
            )
        active = (
            await session.execute(
                select(kind.subject.active_version).where(
                    kind.subject.project_id == body.project_id, kind.subject.name == name
                )
            )
        ).scalar_one_or_none()
        row = kind.table(
            id=new_id(),
            project_id=body.project_id,
            commit_message=body.commit_message,
            base_version=active,
            status="pending",
            proposed_by=principal.owner_id,
            proposed_at=utcnow(),
            **checked.columns,
        )
        session.add(row)
        await session.flush()
        return await kind.store(session, row, checked)


async def list_proposals(
    kind: ReviewKind[RowT, CreateT, PublicT, VersionT],
    session: AsyncSession,
    principal: KeyPrincipal,
    project_id: str,
    status: str,
    limit: int,
) -> list[PublicT]:
    """The project's proposals with ``status``: pending ones oldest first (a queue), decided ones newest first."""
    await versioning.require_member(session, principal, project_id)
    t = kind.table
    order = (t.proposed_at, t.id) if status == "pending" else (t.decided_at.desc(), t.id.desc())
    rows = (
        await session.execute(
            select(t).where(t.project_id == project_id, t.status == status).order_by(*order).limit(limit)
        )
    ).scalars()
    return await kind.views(session, list(rows))


async def get_proposal(
    kind: ReviewKind[RowT, CreateT, PublicT, VersionT],
    session: AsyncSession,
    principal: KeyPrincipal,
    project_id: str,
    proposal_id: str,
) -> PublicT:
    await versioning.require_member(session, principal, project_id)
    row = await session.get(kind.table, proposal_id)
    if row is None or row.project_id != project_id:
        raise NotFound("no such proposal in this project")
    return (await kind.views(session, [row]))[0]


async def _claim(
    kind: ReviewKind[RowT, CreateT, PublicT, VersionT],
    session: AsyncSession,
    principal: KeyPrincipal,
    proposal_id: str,
    decision: ReviewDecision,
    status: str,
) -> RowT:
    """Move a pending proposal of the project to ``status``; refused when it is unknown or already decided."""
    t = kind.table
    claimed = (
        await session.execute(
            update(t)
            .where(t.id == proposal_id, t.project_id == decision.project_id, t.status == "pending")
            .values(
                status=status, decided_by=principal.owner_id, decided_at=utcnow(), comment=decision.comment
            )
            .returning(t.id)
        )
    ).scalar_one_or_none()
    row = await session.get(t, proposal_id, populate_existing=True)
    if row is None or row.project_id != decision.project_id:
        raise NotFound("no such proposal in this project")
    if claimed is None:
        raise AlreadyDecided(f"this proposal was already {row.status}")
    return row


async def approve(
    kind: ReviewKind[RowT, CreateT, PublicT, VersionT],
    sessions: async_sessionmaker[AsyncSession],
    relay: Waker | None,
    principal: KeyPrincipal,
    proposal_id: str,
    decision: ReviewDecision,
) -> tuple[PublicT, VersionT]:
    """Publish the proposal as the next, active version (publish rules apply), in one unit of work."""
    async with versioning.writing(sessions, relay) as uow:
        session = uow.session
        await versioning.authorise_publish(session, principal, decision.project_id)
        row = await _claim(kind, session, principal, proposal_id, decision, "approved")
        message = row.commit_message or f"approved proposal {row.id}"
        published = await kind.publish(session, principal.owner_id, row, message)
        row.version = published.version
        await session.flush()
        return (await kind.views(session, [row]))[0], published


async def reject(
    kind: ReviewKind[RowT, CreateT, PublicT, VersionT],
    sessions: async_sessionmaker[AsyncSession],
    principal: KeyPrincipal,
    proposal_id: str,
    decision: ReviewDecision,
) -> PublicT:
    """Reject with a comment (required: the author needs to know why); publish rules apply."""
    if not (decision.comment or "").strip():
        raise InvalidContent("a rejection needs a comment saying why")
    async with versioning.writing(sessions, None) as uow:
        session = uow.session
        await versioning.authorise_publish(session, principal, decision.project_id)
        row = await _claim(kind, session, principal, proposal_id, decision, "rejected")
        return (await kind.views(session, [row]))[0]
