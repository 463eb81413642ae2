"""Per-request permission resolution (spec 5.1): always from current rows, never cached.

Authentication and authorisation are separate steps: ``authenticate`` answers "which key, whose, which scope"
(401 material); ``project_access`` answers "what may this owner do in that project" (403 material).
Decisions are values with a reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Row, and_, exists, select
from sqlalchemy.ext.asyncio import AsyncSession

from stockade.identity import keys
from stockade.identity.tables import (
    APPROVER_TAG,
    ApiKey,
    Deployment,
    Flow,
    OrganisationMember,
    Project,
    ProjectMember,
    ProjectTag,
    Scope,
)
from stockade.runtime.db_types import utcnow

# owner_id, key_hash, scope, deployment, project_id, revoked_at, expires_at
_KeyRow = Row[str, str, str | None, str, str | None, datetime | None, datetime | None]


@dataclass(frozen=True, slots=True)
class KeyPrincipal:
    """An authenticated key: who it acts as and what it may do at most."""

    key_id: str
    owner_id: str
    scope: Scope  # effective scope in the current deployment


@dataclass(frozen=True, slots=True)
class ProjectAccess:
    project_id: str
    exists: bool
    organisation_id: str | None
    flow: Flow | None
    organisation_member: bool
    project_member: bool
    approver: bool


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    reason: str


def effective_scope(stored: str | None, key_deployment: str, deployment: Deployment) -> Scope:
    """write only for an on-prem key with write scope used on an on-prem deployment; anything else reads."""
    if deployment is Deployment.HOSTED or key_deployment != Deployment.ONPREM.value:
        return Scope.READ
    return Scope.WRITE if stored == Scope.WRITE.value else Scope.READ


async def authenticate(
    session: AsyncSession, plaintext: str | None, deployment: Deployment
) -> KeyPrincipal | None:
    """The key's principal, or None for a missing, malformed, unknown, revoked or expired key, or an ingest key.

    The same work on every path: one hash, one lookup by key id (a placeholder id for malformed keys) and
    one constant-time comparison. An expired key (a console session's credential past its lifetime,
    ``stockade.identity.session_keys``) fails exactly like a revoked one (spec 7: 401 where keys are checked).
    """
    key = keys.presented(plaintext)
    row = await matching_key(session, key)
    if row is None or not usable(row.revoked_at, row.expires_at) or row.scope == Scope.INGEST.value:
        return None  # an ingest key opens guardrail-ingest only (stockade.identity.ingest_keys)
    return KeyPrincipal(
        key_id=key.key_id, owner_id=row.owner_id, scope=effective_scope(row.scope, row.deployment, deployment)
    )


def usable(revoked_at: datetime | None, expires_at: datetime | None, now: datetime | None = None) -> bool:
    """Not revoked, and not past its expiry (only console credentials expire)."""
    return revoked_at is None and (expires_at is None or expires_at > (now or utcnow()))


async def matching_key(session: AsyncSession, key: keys.PresentedKey) -> _KeyRow | None:
    """The presented key's row (owner, scope, deployment, project, revocation) when its stored SHA-256 is the
    presented one, else None. One lookup and one constant-time comparison, also when there is no such key."""
    row = (
        await session.execute(
            select(
                ApiKey.owner_id,
                ApiKey.key_hash,
                ApiKey.scope,
                ApiKey.deployment,
                ApiKey.project_id,
                ApiKey.revoked_at,
                ApiKey.expires_at,
            ).where(ApiKey.id == key.key_id)
        )
    ).one_or_none()
    return row if keys.verify_presented(key, row.key_hash if row is not None else None) else None


async def project_access(session: AsyncSession, user_id: str, project_id: str) -> ProjectAccess:
    """What ``user_id`` may do in ``project_id``, in one query on current data."""
    org_member = exists().where(
        and_(
            OrganisationMember.organisation_id == Project.organisation_id,
            OrganisationMember.user_id == user_id,
        )
    )
    proj_member = exists().where(
        and_(ProjectMember.project_id == Project.id, ProjectMember.user_id == user_id)
    )
    approver = exists().where(
        and_(
            ProjectTag.project_id == Project.id, ProjectTag.user_id == user_id, ProjectTag.tag == APPROVER_TAG
        )
    )
    row = (
        await session.execute(
            select(
                Project.organisation_id,
                Project.flow,
                org_member.label("org_member"),
                proj_member.label("proj_member"),
                approver.label("approver"),
            ).where(Project.id == project_id)
        )
    ).one_or_none()
    if row is None:
        return ProjectAccess(project_id, False, None, None, False, False, False)
    return ProjectAccess(
        project_id=project_id,
        exists=True,
        organisation_id=row.organisation_id,
        flow=Flow(row.flow),
        organisation_member=bool(row.org_member),
        project_member=bool(row.org_member) and bool(row.proj_member),
        approver=bool(row.approver),
    )


def can_list(access: ProjectAccess) -> Decision:
    """Listing (and every read under /skills) needs project membership (spec 5.1)."""
    if not access.project_member:
        return Decision(False, "the key's owner is not a member of this project")
    return Decision(True, "project member")


def can_write(principal: KeyPrincipal) -> Decision:
    """Scope part of a publish: checked before the body is read."""
    if principal.scope is not Scope.WRITE:
        return Decision(False, "this key can only read (read scope, a key without scope, or a hosted key)")
    return Decision(True, "write scope")


def can_publish(principal: KeyPrincipal, access: ProjectAccess) -> Decision:
    """Publishing: write scope, project membership, and the approver tag on Manual review projects."""
    scope = can_write(principal)
    if not scope.allowed:
        return scope
    if not access.project_member:
        return Decision(False, "the key's owner is not a member of this project")
    if access.flow is Flow.MANUAL_REVIEW and not access.approver:
        return Decision(False, "this project uses Manual review: publishing needs the approver tag")
    return Decision(True, "allowed")
