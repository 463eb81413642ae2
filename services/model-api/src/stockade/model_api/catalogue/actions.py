"""What the API and the console both do. Each action is one unit of work: it opens the transaction, changes
the catalogue or the configurations through ``catalogue`` and ``dbconfigs`` (which take the session and never
commit), records the event in the outbox in the same transaction, commits, then wakes the relay.

The session must not be in a transaction when an action starts (the request's session dependency ends its read).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TypeVar

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from stockade.contracts import ApiKeyRevoked, DbConfigActivated, ModelChanged
from stockade.identity import ApiKeyPublic, NotFoundError, list_api_keys, revoke_api_key
from stockade.model_api.catalogue import dbconfigs, platform_audit
from stockade.model_api.catalogue import models as catalogue
from stockade.model_api.catalogue.models import Upserted
from stockade.model_api.catalogue.schemas import DbConfigCreate, DbConfigPublic, ModelIn, ModelPublic
from stockade.model_api.tables import OutboxEvent
from stockade.runtime.outbox import OutboxRelay, enqueue

T = TypeVar("T")


def _wake(relay: OutboxRelay | None) -> None:
    if relay is not None:
        relay.wake()


async def _unit_of_work(db: AsyncSession, work: Callable[[], Awaitable[T]], *, attempts: int = 1) -> T:
    """Run ``work`` in one transaction: committed if it returns, rolled back if it raises. With ``attempts=2``
    a transaction that lost a race to create the same unique key (``IntegrityError``) runs once more."""
    for attempt in range(1, attempts + 1):
        try:
            async with db.begin():
                return await work()
        except IntegrityError:
            if attempt == attempts:
                raise
    raise AssertionError("unreachable")


def _activated(config: DbConfigPublic, correlation_id: str | None) -> DbConfigActivated:
    return DbConfigActivated(
        db_config_id=config.id,
        db_type=config.db_type.value,
        name=config.name,
        activated_at=config.activated_at,
        correlation_id=correlation_id,
    )


async def save_model(
    db: AsyncSession,
    relay: OutboxRelay | None,
    provider: str,
    model: ModelIn,
    *,
    actor: str,
    correlation_id: str | None = None,
    effective_at: datetime | None = None,
) -> tuple[DbConfigPublic, Upserted]:
    async def work() -> tuple[DbConfigPublic, Upserted]:
        config = await dbconfigs.active_config(db)
        saved = await catalogue.upsert_model(
            db, config.id, provider, model, actor=actor, effective_at=effective_at
        )
        event = ModelChanged(
            db_config_id=config.id,
            provider=provider,
            model_id=model.model_id,
            change=saved.change,
            correlation_id=correlation_id,
            effective_at=effective_at,
        )
        enqueue(db, OutboxEvent, event)
        platform_audit.record(
            db, actor, f"model.{saved.change}", f"{provider}/{model.model_id}", db_config=config.id
        )
        return config, saved

    # a concurrent create of the same key won: the second attempt finds it and updates it
    done = await _unit_of_work(db, work, attempts=2)
    _wake(relay)
    return done


async def remove_model(
    db: AsyncSession,
    relay: OutboxRelay | None,
    provider: str,
    model_id: str,
    *,
    actor: str,
    correlation_id: str | None = None,
) -> tuple[DbConfigPublic, ModelPublic]:
    async def work() -> tuple[DbConfigPublic, ModelPublic]:
        config = await dbconfigs.active_config(db)
        gone = await catalogue.delete_model(db, config.id, provider, model_id)
        event = ModelChanged(
            db_config_id=config.id,
            provider=provider,
            model_id=model_id,
            change="deleted",
            correlation_id=correlation_id,
        )
        enqueue(db, OutboxEvent, event)
        platform_audit.record(db, actor, "model.deleted", f"{provider}/{model_id}", db_config=config.id)
        return config, gone

    done = await _unit_of_work(db, work)
    _wake(relay)
    return done


async def create_config(
    db: AsyncSession,
    relay: OutboxRelay | None,
    data: DbConfigCreate,
    *,
    actor: str,
    correlation_id: str | None = None,
) -> DbConfigPublic:
    """Create a configuration and, if ``data.activate``, activate it: one transaction."""

    async def work() -> tuple[DbConfigPublic, bool]:
        config = await dbconfigs.create_config(db, data)
        platform_audit.record(
            db, actor, "dbconfig.created", config.id, name=config.name, db_type=config.db_type.value
        )
        if not data.activate:
            return config, False
        activation = await dbconfigs.activate_config(db, config.id)
        enqueue(db, OutboxEvent, _activated(activation.config, correlation_id))
        platform_audit.record(db, actor, "dbconfig.activated", config.id, name=config.name)
        return activation.config, True

    config, activated = await _unit_of_work(db, work)
    if activated:
        _wake(relay)
    return config


async def activate(
    db: AsyncSession,
    relay: OutboxRelay | None,
    config_id: str,
    *,
    actor: str,
    correlation_id: str | None = None,
) -> DbConfigPublic:
    """Make ``config_id`` the active configuration; the event is recorded only when that changes anything."""

    async def work() -> dbconfigs.Activation:
        activation = await dbconfigs.activate_config(db, config_id)
        if activation.changed:
            enqueue(db, OutboxEvent, _activated(activation.config, correlation_id))
            name = activation.config.name
            platform_audit.record(db, actor, "dbconfig.activated", activation.config.id, name=name)
        return activation

    activation = await _unit_of_work(db, work)
    if activation.changed:
        _wake(relay)
    return activation.config


async def revoke_own_key(
    db: AsyncSession, relay: OutboxRelay | None, user_id: str, key_id: str
) -> ApiKeyPublic:
    """Revoke one of the user's own keys (another user's key is reported as not found).

    stockade.identity commits the revocation itself, so the event is recorded right after, in a second
    transaction (a crash in between loses only the notification; the revocation holds).
    """
    owned = {k.id: k for k in await list_api_keys(db, user_id)}
    if key_id not in owned:
        raise NotFoundError(f"you have no API key {key_id!r}")
    was_active = owned[key_id].revoked_at is None
    revoked = await revoke_api_key(db, key_id)
    if was_active:
        enqueue(
            db,
            OutboxEvent,
            ApiKeyRevoked(key_id=revoked.id, owner_id=revoked.owner_id, project_id=revoked.project_id),
        )
        await db.commit()
        _wake(relay)
    return revoked
