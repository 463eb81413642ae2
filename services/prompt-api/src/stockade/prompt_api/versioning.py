"""What prompts, skills and guardrail policies, the versioned kinds of content, share: who may list and publish, the
listing with each one's active version, a page of its history, and publishing a new active version.

The next version number is allocated under a row lock: ``INSERT ... ON CONFLICT DO NOTHING`` creates the row on the
first publish; ``UPDATE ... SET latest_version = latest_version + 1 ... RETURNING`` locks it until the transaction
ends, so concurrent publishes queue up and each gets the next number: never a duplicate, never a gap (a rolled-back
publish rolls its number back too)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from sqlalchemy import and_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlalchemy.orm import InstrumentedAttribute

from stockade.contracts import PolicyPublished, PromptPublished, SkillPublished
from stockade.identity import KeyPrincipal, can_list, can_publish, project_access
from stockade.prompt_api import paging
from stockade.prompt_api.errors import Forbidden
from stockade.prompt_api.tables import (
    OutboxEvent,
    Policy,
    PolicyVersion,
    Prompt,
    PromptVersion,
    Skill,
    SkillVersion,
)
from stockade.runtime import outbox
from stockade.runtime.db_types import new_id, utcnow
from stockade.runtime.uow import UnitOfWork, Waker

V = TypeVar("V", PromptVersion, SkillVersion, PolicyVersion)


@dataclass(frozen=True)
class Kind(Generic[V]):
    """Where one kind keeps its rows, and the event that says a version was published."""

    noun: str  # "prompt", "skill" or "policy": the event's ``<noun>_name``
    subject: type[Prompt] | type[Skill] | type[Policy]  # one row per name: latest and active version numbers
    versions: type[V]  # the immutable versions
    parent: InstrumentedAttribute[str]  # the versions' key to their subject row
    event: type[PromptPublished] | type[SkillPublished] | type[PolicyPublished]


PROMPTS = Kind("prompt", Prompt, PromptVersion, PromptVersion.prompt_id, PromptPublished)
SKILLS = Kind("skill", Skill, SkillVersion, SkillVersion.skill_id, SkillPublished)
POLICIES = Kind("policy", Policy, PolicyVersion, PolicyVersion.policy_id, PolicyPublished)


async def require_member(session: AsyncSession, principal: KeyPrincipal, project_id: str) -> None:
    """What every listing and read needs: the key's owner is a member of the project (else 403)."""
    if not can_list(await project_access(session, principal.owner_id, project_id)).allowed:
        raise Forbidden("the key's owner is not a member of this project")


async def authorise_publish(session: AsyncSession, principal: KeyPrincipal, project_id: str) -> None:
    """What publishing needs (write scope, membership, the approver tag on a Manual review project)."""
    decision = can_publish(principal, await project_access(session, principal.owner_id, project_id))
    if not decision.allowed:
        raise Forbidden(decision.reason)


def writing(sessions: async_sessionmaker[AsyncSession], relay: Waker | None) -> UnitOfWork:
    """One write of prompt-api: a transaction of its own, its events in prompt-api's outbox, the relay woken after
    the commit (:mod:`stockade.runtime.uow`)."""
    return UnitOfWork(sessions, OutboxEvent, relay)


@asynccontextmanager
async def publishing(
    sessions: async_sessionmaker[AsyncSession],
    relay: Waker | None,
    principal: KeyPrincipal,
    project_id: str,
) -> AsyncIterator[AsyncSession]:
    """A publish: authorised first (403, in a session of its own), then the unit of work that writes it."""
    async with sessions() as session:
        await authorise_publish(session, principal, project_id)
    async with writing(sessions, relay) as uow:
        yield uow.session


async def page_with_active(
    session: AsyncSession,
    kind: Kind[V],
    project_id: str,
    after: str | None,
    limit: int,
    active_only: bool = False,
) -> tuple[list[tuple[Any, V | None]], bool]:
    """One page of the project's names after ``after``, each with its active version (None if it has none);
    and whether more follow."""
    s, v = kind.subject, kind.versions
    query = (
        select(s, v)
        .outerjoin(v, and_(kind.parent == s.id, v.version == s.active_version))
        .where(s.project_id == project_id)
        .order_by(s.name)
        .limit(limit + 1)
    )
    if after is not None:
        query = query.where(s.name > after)
    if active_only:
        query = query.where(s.active_version.is_not(None))
    rows, more = paging.page(list((await session.execute(query)).all()), limit)
    return [(row[0], row[1]) for row in rows], more


async def version_page(
    session: AsyncSession, kind: Kind[V], subject_id: str, before: int | None, limit: int
) -> tuple[list[V], bool]:
    """One page of a name's versions, newest first, older than ``before``; and whether more follow. Versions
    published while a client pages are newer than every page's key, so they never shift a page."""
    v = kind.versions
    query = select(v).where(kind.parent == subject_id).order_by(v.version.desc()).limit(limit + 1)
    if before is not None:
        query = query.where(v.version < before)
    return paging.page(list((await session.execute(query)).scalars().all()), limit)


async def next_version(
    session: AsyncSession, table: type[Prompt] | type[Skill] | type[Policy], project_id: str, name: str
) -> tuple[str, int]:
    """Returns (row id, new version number); the caller's transaction holds the row lock until commit."""
    dialect = session.get_bind().dialect.name
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    await session.execute(
        insert(table)
        .values(id=new_id(), project_id=project_id, name=name, latest_version=0, created_at=utcnow())
        .on_conflict_do_nothing(index_elements=["project_id", "name"])
    )
    row = (
        await session.execute(
            update(table)
            .where(table.project_id == project_id, table.name == name)
            .values(latest_version=table.latest_version + 1)
            .returning(table.id, table.latest_version)
        )
    ).one()
    return str(row[0]), int(row[1])


async def insert_version(
    session: AsyncSession,
    kind: Kind[V],
    published_by: str,
    project_id: str,
    name: str,
    sha256: str,
    commit_message: str | None,
    content: dict[str, Any],
) -> V:
    """Inside the caller's transaction: allocate the version, insert it (``content``: the kind's own columns),
    move the active pointer, enqueue the event. The row is flushed: its id can key further rows."""
    subject_id, version = await next_version(session, kind.subject, project_id, name)
    row = kind.versions(
        id=new_id(),
        version=version,
        sha256=sha256,
        commit_message=commit_message,
        published_by=published_by,
        published_at=utcnow(),
        **{kind.parent.key: subject_id},
        **content,
    )
    session.add(row)
    await session.flush()
    await session.execute(
        update(kind.subject).where(kind.subject.id == subject_id).values(active_version=version)
    )
    event = {f"{kind.noun}_name": name, "version": version, "sha256": sha256, "published_by": published_by}
    outbox.enqueue(session, OutboxEvent, kind.event.model_validate({"project_id": project_id, **event}))
    return row
