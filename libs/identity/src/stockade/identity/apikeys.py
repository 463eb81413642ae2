"""API key lifecycle: create (plaintext returned once), list (never the plaintext), revoke."""

from __future__ import annotations

from sqlalchemy import and_, select
from sqlalchemy.ext.asyncio import AsyncSession

from stockade.identity import keys
from stockade.identity.access import project_access
from stockade.identity.directory import find_project, find_user
from stockade.identity.errors import InvalidInputError, NotFoundError
from stockade.identity.models import ApiKeyCreated, ApiKeyPublic
from stockade.identity.tables import ApiKey, Deployment, Scope
from stockade.runtime.db_types import utcnow


def _public(row: ApiKey) -> ApiKeyPublic:
    return ApiKeyPublic(
        id=row.id,
        owner_id=row.owner_id,
        scope=row.scope,
        deployment=row.deployment,
        display=keys.display(row.id, row.last_four),
        created_at=row.created_at,
        revoked_at=row.revoked_at,
        project_id=row.project_id,
    )


async def create_api_key(
    session: AsyncSession,
    user: str,
    *,
    scope: str | None = Scope.READ.value,
    deployment: str = Deployment.ONPREM.value,
    legacy: bool = False,
    project: str | None = None,
) -> ApiKeyCreated:
    """Create a key for ``user``. Hosted keys have no scope; ``legacy`` makes a key as before scopes existed.

    ``scope="ingest"`` with ``project`` (id or name) makes a per-project ingest key: it sends guardrail run
    events of that project to guardrail-ingest and opens nothing else. Its owner must be a member of the project
    (checked again on every verification). Ingest keys exist on both deployments.
    """
    try:
        mode = Deployment(deployment)
    except ValueError:
        raise InvalidInputError(f"unknown deployment {deployment!r}: use onprem or hosted") from None
    project_id: str | None = None
    if scope == Scope.INGEST.value:
        if legacy:
            raise InvalidInputError("an ingest key cannot be a legacy key")
        if not project:
            raise InvalidInputError("an ingest key needs a project")
        stored: str | None = Scope.INGEST.value
    elif project is not None:
        raise InvalidInputError("only ingest keys are bound to a project (scope ingest)")
    elif mode is Deployment.HOSTED or legacy:
        stored = None
    else:
        try:
            stored = Scope(scope or Scope.READ.value).value
        except ValueError:
            raise InvalidInputError(f"unknown scope {scope!r}: use read, write or ingest") from None
    owner = await find_user(session, user)
    if project is not None:
        found = await find_project(session, project)
        if not (await project_access(session, owner.id, found.id)).project_member:
            raise InvalidInputError(f"{owner.email} is not a member of project {found.name!r}")
        project_id = found.id
    generated = keys.generate_key()
    row = ApiKey(
        id=generated.key_id,
        owner_id=owner.id,
        key_hash=generated.key_hash,
        scope=stored,
        deployment=mode.value,
        last_four=generated.last_four,
        created_at=utcnow(),
        project_id=project_id,
    )
    session.add(row)
    await session.flush()
    return ApiKeyCreated(**_public(row).model_dump(), key=generated.plaintext)


async def list_api_keys(session: AsyncSession, user: str) -> list[ApiKeyPublic]:
    """The user's keys, oldest first; console session credentials (``session_keys``) are not listed."""
    owner = await find_user(session, user)
    mine = and_(ApiKey.owner_id == owner.id, ApiKey.console_session_id.is_(None))
    rows = (await session.execute(select(ApiKey).where(mine).order_by(ApiKey.created_at))).scalars().all()
    return [_public(r) for r in rows]


async def _key_row(session: AsyncSession, key_id: str) -> ApiKey:
    key_id = keys.key_id_of(key_id) or key_id
    row = await session.get(ApiKey, key_id)
    if row is None:
        raise NotFoundError(f"no API key {key_id!r}")
    return row


async def find_api_key(session: AsyncSession, key_id: str) -> ApiKeyPublic:
    """One key by id (a full key is accepted too); NotFoundError if there is none."""
    return _public(await _key_row(session, key_id))


async def revoke_api_key(session: AsyncSession, key_id: str) -> ApiKeyPublic:
    """Revoke by key id (a full key is accepted too), in the caller's transaction: effective on the next request
    once it commits. Idempotent: a revoked key keeps its first ``revoked_at``."""
    row = await _key_row(session, key_id)
    if row.revoked_at is None:
        row.revoked_at = utcnow()
        await session.flush()
    return _public(row)
