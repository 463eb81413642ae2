"""What the prompt pages show about projects and people, read from the identity tables (display only: prompt-api
decides every permission on its own, from the same rows, per request)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import and_, select
from sqlalchemy.ext.asyncio import AsyncSession

from stockade.identity import APPROVER_TAG, Flow
from stockade.identity.tables import Organisation, Project, ProjectMember, ProjectTag, User


@dataclass(frozen=True, slots=True)
class MyProject:
    id: str
    name: str
    organisation: str
    manual_review: bool
    approver: bool


async def my_projects(session: AsyncSession, user_id: str) -> list[MyProject]:
    """The projects ``user_id`` is a member of, by organisation and name."""
    tag = and_(
        ProjectTag.project_id == Project.id, ProjectTag.user_id == user_id, ProjectTag.tag == APPROVER_TAG
    )
    rows = await session.execute(
        select(Project.id, Project.name, Project.flow, Organisation.name.label("org"), ProjectTag.tag)
        .join(ProjectMember, and_(ProjectMember.project_id == Project.id, ProjectMember.user_id == user_id))
        .join(Organisation, Organisation.id == Project.organisation_id)
        .outerjoin(ProjectTag, tag)
        .order_by(Organisation.name, Project.name)
    )
    return [
        MyProject(r.id, r.name, r.org, r.flow == Flow.MANUAL_REVIEW.value, r.tag is not None)
        for r in rows.all()
    ]


async def project(session: AsyncSession, user_id: str, project_id: str) -> MyProject | None:
    return next((p for p in await my_projects(session, user_id) if p.id == project_id), None)


async def emails(session: AsyncSession, user_ids: set[str]) -> dict[str, str]:
    """E-mail per user id, to show who published or proposed (unknown ids stay ids)."""
    if not user_ids:
        return {}
    rows = await session.execute(select(User.id, User.email).where(User.id.in_(sorted(user_ids))))
    return {r.id: r.email for r in rows.all()}
