"""Organisations, users, projects, memberships and approver tags: the writes behind the console and CLI."""

from __future__ import annotations

import re
from typing import TypeVar

from sqlalchemy import Select, delete, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from stockade.identity.errors import ConflictError, InvalidInputError, NotFoundError
from stockade.identity.models import OrganisationPublic, ProjectPublic, UserPublic
from stockade.identity.passwords import MIN_PASSWORD_LENGTH, hash_in_worker
from stockade.identity.tables import (
    APPROVER_TAG,
    Base,
    Flow,
    Organisation,
    OrganisationMember,
    Project,
    ProjectMember,
    ProjectTag,
    User,
)

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+$")
TAGS = frozenset({APPROVER_TAG})
_Row = TypeVar("_Row")


def _name(value: str, what: str) -> str:
    value = value.strip()
    if not value or len(value) > 200:
        raise InvalidInputError(f"{what} name must be 1-200 characters")
    return value


async def _add(session: AsyncSession, row: Base, conflict: str) -> None:
    """Insert ``row`` in the caller's transaction, under a savepoint: a row that exists already is a
    :class:`ConflictError` and leaves the caller's transaction usable. Never commits."""
    try:
        async with session.begin_nested():
            session.add(row)
    except IntegrityError as exc:
        raise ConflictError(conflict) from exc


async def _delete(session: AsyncSession, table: type[Base], **columns: object) -> bool:
    """Deletes the rows of ``table`` with these column values (caller's transaction); whether there was one."""
    result = await session.execute(delete(table).filter_by(**columns))
    return bool(getattr(result, "rowcount", 0))


# --- lookups by id or unique name -----------------------------------------------------------------------------
async def find_organisation(session: AsyncSession, ref: str) -> Organisation:
    return await _one(
        session,
        select(Organisation).where(or_(Organisation.id == ref, Organisation.name == ref)),
        f"no organisation {ref!r}",
    )


async def find_user(session: AsyncSession, ref: str) -> User:
    return await _one(
        session,
        select(User).where(or_(User.id == ref, User.email == ref.strip().lower())),
        f"no user {ref!r}",
    )


async def _one(session: AsyncSession, statement: Select[_Row], missing: str) -> _Row:
    """The one row ``statement`` selects; NotFoundError(``missing``) when there is none."""
    row = (await session.execute(statement)).scalar_one_or_none()
    if row is None:
        raise NotFoundError(missing)
    return row


async def find_project(session: AsyncSession, ref: str) -> Project:
    rows = (
        (await session.execute(select(Project).where(or_(Project.id == ref, Project.name == ref))))
        .scalars()
        .all()
    )
    by_id = [p for p in rows if p.id == ref]
    if by_id:
        return by_id[0]
    if not rows:
        raise NotFoundError(f"no project {ref!r}")
    if len(rows) > 1:
        raise InvalidInputError(f"project name {ref!r} exists in several organisations: use the project id")
    return rows[0]


# --- creation ---------------------------------------------------------------------------------------------
async def create_organisation(session: AsyncSession, name: str) -> OrganisationPublic:
    org = Organisation(name=_name(name, "organisation"))
    await _add(session, org, f"organisation {name!r} exists already")
    return OrganisationPublic.model_validate(org)


async def create_user(session: AsyncSession, email: str, password: str | None = None) -> UserPublic:
    email = email.strip().lower()
    if not _EMAIL.match(email) or len(email) > 320:
        raise InvalidInputError(f"not an e-mail address: {email!r}")
    if password is not None and len(password) < MIN_PASSWORD_LENGTH:
        raise InvalidInputError(f"a password needs at least {MIN_PASSWORD_LENGTH} characters")
    user = User(email=email, password_hash=await hash_in_worker(password) if password else None)
    await _add(session, user, f"user {email!r} exists already")
    return UserPublic.model_validate(user)


async def create_project(
    session: AsyncSession, organisation: str, name: str, flow: str = Flow.DIRECT.value
) -> ProjectPublic:
    org = await find_organisation(session, organisation)
    project = Project(organisation_id=org.id, name=_name(name, "project"), flow=_flow(flow).value)
    await _add(session, project, f"project {name!r} exists already in {org.name!r}")
    return ProjectPublic.model_validate(project)


def _flow(flow: str) -> Flow:
    normalised = flow.strip().lower().replace(" ", "-").replace("_", "-")
    try:
        return Flow(normalised)
    except ValueError:
        raise InvalidInputError(f"unknown flow {flow!r}: use direct or manual-review") from None


async def set_project_flow(session: AsyncSession, project: str, flow: str) -> ProjectPublic:
    row = await find_project(session, project)
    row.flow = _flow(flow).value
    await session.flush()
    return ProjectPublic.model_validate(row)


# --- memberships ------------------------------------------------------------------------------------------
async def add_organisation_member(session: AsyncSession, organisation: str, user: str) -> None:
    org = await find_organisation(session, organisation)
    usr = await find_user(session, user)
    member = OrganisationMember(organisation_id=org.id, user_id=usr.id)
    await _add(session, member, f"{usr.email} is already a member of {org.name}")


async def remove_organisation_member(session: AsyncSession, organisation: str, user: str) -> bool:
    org = await find_organisation(session, organisation)
    usr = await find_user(session, user)
    return await _delete(session, OrganisationMember, organisation_id=org.id, user_id=usr.id)


async def add_project_member(session: AsyncSession, project: str, user: str) -> None:
    """Adds the user to the project (and to its organisation, if not yet a member)."""
    proj = await find_project(session, project)
    usr = await find_user(session, user)
    in_org = await session.get(OrganisationMember, (proj.organisation_id, usr.id))
    if in_org is None:
        session.add(OrganisationMember(organisation_id=proj.organisation_id, user_id=usr.id))
    member = ProjectMember(project_id=proj.id, user_id=usr.id)
    await _add(session, member, f"{usr.email} is already a member of project {proj.name}")


async def remove_project_member(session: AsyncSession, project: str, user: str) -> bool:
    proj = await find_project(session, project)
    usr = await find_user(session, user)
    return await _delete(session, ProjectMember, project_id=proj.id, user_id=usr.id)


# --- tags -------------------------------------------------------------------------------------------------
def _tag(tag: str) -> str:
    if tag not in TAGS:
        raise InvalidInputError(f"unknown tag {tag!r}: the only tag is {APPROVER_TAG!r}")
    return tag


async def grant_tag(session: AsyncSession, project: str, user: str, tag: str = APPROVER_TAG) -> None:
    proj = await find_project(session, project)
    usr = await find_user(session, user)
    if await session.get(ProjectTag, (proj.id, usr.id, _tag(tag))) is not None:
        return
    held = ProjectTag(project_id=proj.id, user_id=usr.id, tag=tag)
    await _add(session, held, f"{usr.email} already holds {tag} on {proj.name}")


async def revoke_tag(session: AsyncSession, project: str, user: str, tag: str = APPROVER_TAG) -> bool:
    proj = await find_project(session, project)
    usr = await find_user(session, user)
    return await _delete(session, ProjectTag, project_id=proj.id, user_id=usr.id, tag=_tag(tag))
