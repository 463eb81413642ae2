"""Guardrail policy service functions (issue 31): the active read, listing, history, publish and rollback. A policy
version is checked (:mod:`~stockade.prompt_api.policy_check`) before anything is stored; the rest is the shared
versioning of prompts and skills (:mod:`~stockade.prompt_api.versioning`, kind ``POLICIES``)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from stockade.identity import Deployment, KeyPrincipal, authenticate, project_access
from stockade.prompt_api import versioning
from stockade.prompt_api.errors import NotFound
from stockade.prompt_api.policy_check import check_policy, policy_sha256
from stockade.prompt_api.schemas import PolicyPublish, PolicySummary, PolicyVersionPublic
from stockade.prompt_api.settings import LimitSettings
from stockade.prompt_api.tables import Policy, PolicyVersion
from stockade.runtime.uow import Waker

_NOBODY = "-"  # the user id a failed key resolves to: no membership matches it


def etag(version: int, sha256: str) -> str:
    return f'"{version}-{sha256}"'


def _public(project_id: str, name: str, v: PolicyVersion) -> PolicyVersionPublic:
    return PolicyVersionPublic(
        project_id=project_id,
        policy_name=name,
        version=v.version,
        yaml=v.yaml,
        sha256=v.sha256,
        commit_message=v.commit_message,
        published_at=v.published_at,
        published_by=v.published_by,
    )


async def read_active(
    session: AsyncSession,
    api_key: str | None,
    project_id: str,
    policy_name: str,
    deployment: Deployment,
) -> PolicyVersionPublic | None:
    """The active version for a key whose owner is a member of the project's organisation (the prompt read's
    rule, spec 5.1); None for every failure, after the same work: the key check, the access query and the
    version query run whatever the key turned out to be."""
    principal = await authenticate(session, api_key, deployment)
    access = await project_access(session, principal.owner_id if principal else _NOBODY, project_id)
    found = (
        await session.execute(
            select(PolicyVersion)
            .join(Policy, Policy.id == PolicyVersion.policy_id)
            .where(
                Policy.project_id == project_id,
                Policy.name == policy_name,
                PolicyVersion.version == Policy.active_version,
            )
        )
    ).scalar_one_or_none()
    if principal is None or not access.organisation_member or found is None:
        return None
    return _public(project_id, policy_name, found)


async def list_policies(
    session: AsyncSession, principal: KeyPrincipal, project_id: str, after: str | None, limit: int
) -> tuple[list[PolicySummary], str | None]:
    """One page of the project's policies by name, after ``after``; and the last name if more follow."""
    await versioning.require_member(session, principal, project_id)
    rows, more = await versioning.page_with_active(session, versioning.POLICIES, project_id, after, limit)
    listed = [
        PolicySummary(
            policy_name=p.name,
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
    policy_name: str,
    before: int | None,
    limit: int,
) -> tuple[list[PolicyVersionPublic], int | None]:
    """One page of a policy's versions, newest first, older than ``before``; and the last version if more follow."""
    await versioning.require_member(session, principal, project_id)
    policy_id = (
        await session.execute(
            select(Policy.id).where(Policy.project_id == project_id, Policy.name == policy_name)
        )
    ).scalar_one_or_none()
    if policy_id is None:
        raise NotFound(f"no policy {policy_name!r} in this project")
    rows, more = await versioning.version_page(session, versioning.POLICIES, policy_id, before, limit)
    return [_public(project_id, policy_name, v) for v in rows], (rows[-1].version if more else None)


async def insert_version(
    session: AsyncSession,
    published_by: str,
    project_id: str,
    policy_name: str,
    text: str,
    commit_message: str | None,
) -> PolicyVersionPublic:
    """Inside the caller's transaction: :func:`versioning.insert_version` of a policy (checked before)."""
    columns = {"yaml": text}
    row = await versioning.insert_version(
        session,
        versioning.POLICIES,
        published_by,
        project_id,
        policy_name,
        policy_sha256(text),
        commit_message,
        columns,
    )
    return _public(project_id, policy_name, row)


async def publish(
    sessions: async_sessionmaker[AsyncSession],
    relay: Waker | None,
    principal: KeyPrincipal,
    body: PolicyPublish,
    limits: LimitSettings,
) -> PolicyVersionPublic:
    check_policy(body.yaml, limits)
    async with versioning.publishing(sessions, relay, principal, body.project_id) as session:
        return await insert_version(
            session, principal.owner_id, body.project_id, body.policy_name, body.yaml, body.commit_message
        )


async def rollback(
    sessions: async_sessionmaker[AsyncSession],
    relay: Waker | None,
    principal: KeyPrincipal,
    project_id: str,
    policy_name: str,
    target: int,
    commit_message: str | None,
) -> PolicyVersionPublic:
    """Publish an earlier version's YAML as a new active version, under the same rules as publish."""
    async with versioning.publishing(sessions, relay, principal, project_id) as session:
        old = (
            await session.execute(
                select(PolicyVersion.yaml)
                .join(Policy, Policy.id == PolicyVersion.policy_id)
                .where(
                    Policy.project_id == project_id,
                    Policy.name == policy_name,
                    PolicyVersion.version == target,
                )
            )
        ).scalar_one_or_none()
        if old is None:
            raise NotFound(f"policy {policy_name!r} has no version {target}")
        message = commit_message or f"rollback to version {target}"
        return await insert_version(session, principal.owner_id, project_id, policy_name, old, message)
