"""Database configurations: list, create, activate; exactly one is active and the catalogue follows it."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from stockade.contracts import EventEnvelope
from stockade.identity.db_types import utcnow
from stockade.model_api.errors import ConfigConflict, ConfigNotFound
from stockade.model_api.events import enqueue
from stockade.model_api.schemas import DbConfigCreate, DbConfigPublic
from stockade.model_api.tables import DbConfig
from stockade.model_api.vocabulary import DbType
from stockade.runtime.storable import is_storable

DEFAULT_NAME = "default"
DEFAULT_TYPE = DbType.CLICKHOUSE


def _public(row: DbConfig) -> DbConfigPublic:
    return DbConfigPublic.model_validate(row, from_attributes=True)


async def list_configs(session: AsyncSession) -> list[DbConfigPublic]:
    await active_config(session)
    rows = (await session.execute(select(DbConfig).order_by(DbConfig.created_at, DbConfig.name))).scalars()
    return [_public(r) for r in rows]


async def active_config(session: AsyncSession) -> DbConfigPublic:
    """The active configuration; an empty database gets an active ``default`` one on first use."""
    row = (await session.execute(select(DbConfig).where(DbConfig.is_active))).scalar_one_or_none()
    if row is not None:
        return _public(row)
    has_any = (await session.execute(select(DbConfig.id).limit(1))).first() is not None
    if not has_any:
        now = utcnow()
        session.add(
            DbConfig(
                name=DEFAULT_NAME,
                db_type=DEFAULT_TYPE.value,
                description="Created on first use",
                is_active=True,
                created_at=now,
                activated_at=now,
            )
        )
        try:
            await session.commit()
        except IntegrityError:  # another request created it at the same moment
            await session.rollback()
    row = (await session.execute(select(DbConfig).where(DbConfig.is_active))).scalar_one_or_none()
    if row is None:  # configurations exist but none is active (only after manual edits): activate the oldest
        oldest = (await session.execute(select(DbConfig).order_by(DbConfig.created_at).limit(1))).scalar_one()
        return await activate_config(session, oldest.id)
    return _public(row)


async def get_config(session: AsyncSession, config_id: str) -> DbConfigPublic:
    row = await session.get(DbConfig, config_id) if is_storable(config_id) else None
    if row is None:
        raise ConfigNotFound(f"no database configuration {config_id!r}")
    return _public(row)


async def create_config(session: AsyncSession, data: DbConfigCreate) -> DbConfigPublic:
    await active_config(session)
    row = DbConfig(
        name=data.name,
        db_type=data.db_type.value,
        description=(data.description or "").strip() or None,
        is_active=False,
        created_at=utcnow(),
    )
    session.add(row)
    try:
        await session.commit()
    except IntegrityError:
        await session.rollback()
        raise ConfigConflict(f"a database configuration named {data.name!r} exists already") from None
    if data.activate:
        return await activate_config(session, row.id)
    return _public(row)


async def activate_config(
    session: AsyncSession,
    config_id: str,
    *,
    event_for: Callable[[DbConfigPublic], EventEnvelope] | None = None,
) -> DbConfigPublic:
    """Make ``config_id`` the one active configuration, in one transaction (idempotent).

    ``event_for(config)`` builds the event put into the outbox in the same transaction, only on a change.
    """
    if not is_storable(config_id):  # no row can have this id, and PostgreSQL cannot even compare it
        raise ConfigNotFound(f"no database configuration {config_id!r}")
    # Lock every configuration row (a handful) so two concurrent activations run one after the other.
    await session.execute(select(DbConfig.id).order_by(DbConfig.id).with_for_update())
    target = await session.get(DbConfig, config_id, populate_existing=True)
    if target is None:
        await session.rollback()
        raise ConfigNotFound(f"no database configuration {config_id!r}")
    if target.is_active:
        await session.commit()
        return _public(target)
    await session.execute(update(DbConfig).where(DbConfig.is_active).values(is_active=False))
    await session.flush()
    target.is_active = True
    target.activated_at = utcnow()
    if event_for is not None:
        enqueue(session, event_for(_public(target)))
    await session.commit()
    return _public(target)
