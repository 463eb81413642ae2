"""Prompt service functions: the uniform read, listing, history, publish and rollback."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from sqlalchemy import Row, and_, bindparam, case, literal, or_, select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession, async_sessionmaker

from stockade.identity import KeyPrincipal, keys
from stockade.identity.access import usable
from stockade.identity.tables import ApiKey, OrganisationMember, Project
from stockade.prompt_api import versioning
from stockade.prompt_api.errors import InvalidContent, NotFound
from stockade.prompt_api.schemas import ChatMessage, PromptPublish, PromptSummary, PromptVersionPublic
from stockade.prompt_api.settings import LimitSettings
from stockade.prompt_api.tables import Prompt, PromptVersion
from stockade.runtime.db_types import utcnow
from stockade.runtime.uow import Waker


def content_sha256(content: Any, config: Any) -> str:
    canonical = json.dumps({"content": content, "config": config}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def etag(version: int, sha256: str) -> str:
    return f'"{version}-{sha256}"'


def _public(project_id: str, name: str, v: PromptVersion | Row[Any]) -> PromptVersionPublic:
    """A stored version as answered (``v``: the row, or the uniform read's result row with the same columns)."""
    return PromptVersionPublic(
        project_id=project_id,
        prompt_name=name,
        version=v.version,
        content=v.content,
        config=v.config,
        sha256=v.sha256,
        commit_message=v.commit_message,
        published_at=v.published_at,
        published_by=v.published_by,
    )


# One statement, built once: key, organisation membership, project, prompt and active version in one round trip.
# Left joins from a one-row anchor: every request gets exactly one row whatever exists, and the content is read
# only when the key matches, is live and its owner is an organisation member (finding L4: an unknown key, a
# foreign project and an unknown prompt do the same work). The hash is compared again in constant time below.
_ANCHOR = select(literal(1).label("one")).subquery("request")
_OPENED = and_(
    ApiKey.key_hash == bindparam("key_hash"),
    ApiKey.revoked_at.is_(None),
    or_(ApiKey.expires_at.is_(None), ApiKey.expires_at > bindparam("now")),
    OrganisationMember.user_id.is_not(None),
)
_READ_ACTIVE = (
    select(
        PromptVersion.version,
        case((_OPENED, PromptVersion.content), else_=None).label("content"),
        case((_OPENED, PromptVersion.config), else_=None).label("config"),
        PromptVersion.sha256,
        PromptVersion.commit_message,
        PromptVersion.published_at,
        PromptVersion.published_by,
        ApiKey.key_hash,
        ApiKey.revoked_at,
        ApiKey.expires_at,
        OrganisationMember.user_id.label("member"),
    )
    .select_from(_ANCHOR)
    .outerjoin(Project, Project.id == bindparam("project_id"))
    .outerjoin(Prompt, and_(Prompt.project_id == Project.id, Prompt.name == bindparam("prompt_name")))
    .outerjoin(
        PromptVersion,
        and_(PromptVersion.prompt_id == Prompt.id, PromptVersion.version == Prompt.active_version),
    )
    .outerjoin(  # an ingest key opens guardrail-ingest only: here it is no key at all
        ApiKey, and_(ApiKey.id == bindparam("key_id"), or_(ApiKey.scope.is_(None), ApiKey.scope != "ingest"))
    )
    .outerjoin(
        OrganisationMember,
        and_(
            OrganisationMember.organisation_id == Project.organisation_id,
            OrganisationMember.user_id == ApiKey.owner_id,
        ),
    )
)


async def read_active(
    conn: AsyncConnection, api_key: str | None, project_id: str | None, prompt_name: str | None
) -> PromptVersionPublic | None:
    """The uniform read: None for every failure, after the same work (one hash, one query returning one row, one
    comparison)."""
    key = keys.presented(api_key)
    now = utcnow()
    params = {
        "key_id": key.key_id,
        "project_id": project_id or "",
        "prompt_name": prompt_name or "",
        "key_hash": key.key_hash,
        "now": now,
    }
    row = (await conn.execute(_READ_ACTIVE, params)).one_or_none()
    matches = keys.verify_presented(key, row.key_hash if row is not None else None)
    if row is None or not matches or row.content is None or row.member is None:
        return None
    if not usable(row.revoked_at, row.expires_at, now):
        return None
    return _public(project_id or "", prompt_name or "", row)


async def read_active_once(
    engine: AsyncEngine, api_key: str | None, project_id: str | None, prompt_name: str | None
) -> PromptVersionPublic | None:
    """``read_active`` on a pooled connection; a connection dropped by the server is retried once."""
    for attempt in (1, 2):
        try:
            async with engine.connect() as conn:
                return await read_active(conn, api_key, project_id, prompt_name)
        except DBAPIError as exc:
            if attempt == 2 or not exc.connection_invalidated:
                raise
    raise AssertionError("unreachable")


async def list_prompts(
    session: AsyncSession, principal: KeyPrincipal, project_id: str, after: str | None, limit: int
) -> tuple[list[PromptSummary], str | None]:
    """One page of the project's prompts by name, after ``after``; and the last name if more follow."""
    await versioning.require_member(session, principal, project_id)
    rows, more = await versioning.page_with_active(session, versioning.PROMPTS, project_id, after, limit)
    listed = [
        PromptSummary(
            prompt_name=p.name,
            active_version=p.active_version,
            latest_version=p.latest_version,
            active=_public(project_id, p.name, v) if v is not None else None,
        )
        for p, v in rows
    ]
    return listed, (rows[-1][0].name if more else None)


async def history(
    session: AsyncSession,
    principal: KeyPrincipal,
    project_id: str,
    prompt_name: str,
    before: int | None,
    limit: int,
) -> tuple[list[PromptVersionPublic], int | None]:
    """One page of a prompt's versions, newest first, older than ``before``; and the last version if more follow."""
    await versioning.require_member(session, principal, project_id)
    prompt_id = (
        await session.execute(
            select(Prompt.id).where(Prompt.project_id == project_id, Prompt.name == prompt_name)
        )
    ).scalar_one_or_none()
    if prompt_id is None:
        raise NotFound(f"no prompt {prompt_name!r} in this project")
    rows, more = await versioning.version_page(session, versioning.PROMPTS, prompt_id, before, limit)
    return [_public(project_id, prompt_name, v) for v in rows], (rows[-1].version if more else None)


async def insert_version(
    session: AsyncSession,
    published_by: str,
    project_id: str,
    prompt_name: str,
    content: Any,
    config: Any,
    commit_message: str | None,
) -> PromptVersionPublic:
    """Inside the caller's transaction: :func:`versioning.insert_version` of a prompt."""
    sha = content_sha256(content, config)
    columns = {"content": content, "config": config}
    row = await versioning.insert_version(
        session, versioning.PROMPTS, published_by, project_id, prompt_name, sha, commit_message, columns
    )
    return _public(project_id, prompt_name, row)


def stored_content(content: str | list[ChatMessage]) -> Any:
    """A prompt's content as stored: text, or chat messages as plain JSON objects."""
    return content if isinstance(content, str) else [m.model_dump() for m in content]


def check_size(content: Any, config: Any, limits: LimitSettings) -> None:
    size = len(json.dumps({"content": content, "config": config}).encode())
    if size > limits.max_prompt_bytes:
        raise InvalidContent(
            f"prompt content and config are {size} bytes; the limit is {limits.max_prompt_bytes}"
        )


async def publish(
    sessions: async_sessionmaker[AsyncSession],
    relay: Waker | None,
    principal: KeyPrincipal,
    body: PromptPublish,
    limits: LimitSettings,
) -> PromptVersionPublic:
    content = stored_content(body.content)
    check_size(content, body.config, limits)
    async with versioning.publishing(sessions, relay, principal, body.project_id) as session:
        return await insert_version(
            session,
            principal.owner_id,
            body.project_id,
            body.prompt_name,
            content,
            body.config,
            body.commit_message,
        )


async def rollback(
    sessions: async_sessionmaker[AsyncSession],
    relay: Waker | None,
    principal: KeyPrincipal,
    project_id: str,
    prompt_name: str,
    target: int,
    commit_message: str | None,
) -> PromptVersionPublic:
    """Publish an earlier version's content as a new active version, under the same rules as publish."""
    async with sessions() as session:
        await versioning.authorise_publish(session, principal, project_id)
        old = (
            await session.execute(
                select(PromptVersion)
                .join(Prompt, Prompt.id == PromptVersion.prompt_id)
                .where(
                    Prompt.project_id == project_id,
                    Prompt.name == prompt_name,
                    PromptVersion.version == target,
                )
            )
        ).scalar_one_or_none()
        if old is None:
            raise NotFound(f"prompt {prompt_name!r} has no version {target}")
        content, config = old.content, old.config
    message = commit_message or f"rollback to version {target}"
    async with versioning.writing(sessions, relay) as uow:
        return await insert_version(
            uow.session, principal.owner_id, project_id, prompt_name, content, config, message
        )
