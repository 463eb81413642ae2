"""Database configurations: list, create, activate; exactly one is active and the catalogue follows it.

The functions take the caller's session and never commit: the caller (``actions``) owns the transaction. The
migrations create the first active configuration, so reads only read.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from stockade.model_api.catalogue.schemas import DbConfigCreate, DbConfigPublic
from stockade.model_api.errors import ConfigConflict, ConfigNotFound, NoActiveConfig
from stockade.model_api.tables import DbConfig
from stockade.runtime.db_types import utcnow
from stockade.runtime.storable import is_storable


@dataclass(frozen=True, slots=True)
class Activation:
    config: DbConfigPublic
    changed: bool  # False: it was the active one already


def _public(row: DbConfig) -> DbConfigPublic:
    return DbConfigPublic.model_validate(row, from_attributes=True)


async def list_configs(session: AsyncSession) -> list[DbConfigPublic]:
    rows = (await session.execute(select(DbConfig).order_by(DbConfig.created_at, DbConfig.name))).scalars()
    return [_public(r) for r in rows]


async def active_config(session: AsyncSession) -> DbConfigPublic:
    """The active configuration (migration ``model_api_0004`` makes one active on an empty database)."""
    row = (await session.execute(select(DbConfig).where(DbConfig.is_active))).scalar_one_or_none()
    if row is None:
        raise NoActiveConfig("no database configuration is active: activate one under /db-configs")
    return _public(row)


async def get_config(session: AsyncSession, config_id: str) -> DbConfigPublic:
    row = await session.get(DbConfig, config_id) if is_storable(config_id) else None
    if row is None:
        raise ConfigNotFound(f"no database configuration {config_id!r}")
    return _public(row)


async def create_config(session: AsyncSession, data: DbConfigCreate) -> DbConfigPublic:
    """Add an inactive configuration (``data.activate`` is the caller's to act on)."""
    row = DbConfig(
        name=data.name,
        db_type=data.db_type.value,
        description=(data.description or "").strip() or None,
        is_active=False,
        created_at=utcnow(),
    )
    session.add(row)
    try:
        await session.flush()
    except IntegrityError:
        raise ConfigConflict(f"a database configuration named {data.name!r} exists already") from None
    return _public(row)


async def activate_config(session: AsyncSession, config_id: str) -> Activation:
    """Make ``config_id`` the one active configuration (idempotent: ``changed`` says whether it was not)."""
    if not is_storable(config_id):  # no row can have this id, and PostgreSQL cannot even compare it
        raise ConfigNotFound(f"no database configuration {config_id!r}")
    # Lock every configuration row (a handful) so two concurrent activations run one after the other.
    await session.execute(select(DbConfig.id).order_by(DbConfig.id).with_for_update())
    target = await session.get(DbConfig, config_id, populate_existing=True)
    if target is None:
        raise ConfigNotFound(f"no database configuration {config_id!r}")
    if target.is_active:
        return Activation(_public(target), changed=False)
    await session.execute(update(DbConfig).where(DbConfig.is_active).values(is_active=False))
    await session.flush()
    target.is_active = True
    target.activated_at = utcnow()
    await session.flush()
    return Activation(_public(target), changed=True)
