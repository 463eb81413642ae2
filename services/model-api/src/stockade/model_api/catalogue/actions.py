"""What the API and the console both do. Each action is one unit of work (:mod:`stockade.runtime.uow`): it opens
the transaction, changes the catalogue, the configurations or the keys through ``catalogue``, ``dbconfigs`` and
``stockade.identity`` (which take the session and never commit), records the event in the outbox in the same
transaction, commits, then wakes the relay.

The session must not be in a transaction when an action starts (the request's session dependency ends its read).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from stockade.contracts import ApiKeyRevoked, DbConfigActivated, ModelChanged
from stockade.identity import ApiKeyPublic, NotFoundError, list_api_keys, revoke_api_key
from stockade.model_api.catalogue import dbconfigs, platform_audit
from stockade.model_api.catalogue import models as catalogue
from stockade.model_api.catalogue.models import Upserted
from stockade.model_api.catalogue.schemas import DbConfigCreate, DbConfigPublic, ModelIn, ModelPublic
from stockade.model_api.tables import OutboxEvent
from stockade.runtime.outbox import OutboxRelay
from stockade.runtime.uow import UnitOfWork


def _unit(db: AsyncSession, relay: OutboxRelay | None) -> UnitOfWork:
    """An action's unit of work: model-api's outbox, its relay woken after the commit."""
    return UnitOfWork(db, OutboxEvent, relay)


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
    async def work(uow: UnitOfWork) -> tuple[DbConfigPublic, Upserted]:
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
        uow.enqueue(event)
        platform_audit.record(
            db, actor, f"model.{saved.change}", f"{provider}/{model.model_id}", db_config=config.id
        )
        return config, saved

    # a concurrent create of the same key won: the second attempt finds it and updates it
    return await _unit(db, relay).run(work, attempts=2)


async def remove_model(
    db: AsyncSession,
    relay: OutboxRelay | None,
    provider: str,
    model_id: str,
    *,
    actor: str,
    correlation_id: str | None = None,
) -> tuple[DbConfigPublic, ModelPublic]:
    async def work(uow: UnitOfWork) -> tuple[DbConfigPublic, ModelPublic]:
        config = await dbconfigs.active_config(db)
        gone = await catalogue.delete_model(db, config.id, provider, model_id)
        event = ModelChanged(
            db_config_id=config.id,
            provider=provider,
            model_id=model_id,
            change="deleted",
            correlation_id=correlation_id,
        )
        uow.enqueue(event)
        platform_audit.record(db, actor, "model.deleted", f"{provider}/{model_id}", db_config=config.id)
        return config, gone

    return await _unit(db, relay).run(work)


async def create_config(
    db: AsyncSession,
    relay: OutboxRelay | None,
    data: DbConfigCreate,
    *,
    actor: str,
    correlation_id: str | None = None,
) -> DbConfigPublic:
    """Create a configuration and, if ``data.activate``, activate it: one transaction."""

    async def work(uow: UnitOfWork) -> DbConfigPublic:
        config = await dbconfigs.create_config(db, data)
        platform_audit.record(
            db, actor, "dbconfig.created", config.id, name=config.name, db_type=config.db_type.value
        )
        if not data.activate:
            return config
        activation = await dbconfigs.activate_config(db, config.id)
        uow.enqueue(_activated(activation.config, correlation_id))
        platform_audit.record(db, actor, "dbconfig.activated", config.id, name=config.name)
        return activation.config

    return await _unit(db, relay).run(work)


async def activate(
    db: AsyncSession,
    relay: OutboxRelay | None,
    config_id: str,
    *,
    actor: str,
    correlation_id: str | None = None,
) -> DbConfigPublic:
    """Make ``config_id`` the active configuration; the event is recorded only when that changes anything."""

    async def work(uow: UnitOfWork) -> dbconfigs.Activation:
        activation = await dbconfigs.activate_config(db, config_id)
        if activation.changed:
            uow.enqueue(_activated(activation.config, correlation_id))
            name = activation.config.name
            platform_audit.record(db, actor, "dbconfig.activated", activation.config.id, name=name)
        return activation

    activation = await _unit(db, relay).run(work)  # the relay is woken only when an event was recorded
    return activation.config


async def revoke_own_key(
    db: AsyncSession, relay: OutboxRelay | None, user_id: str, key_id: str
) -> ApiKeyPublic:
    """Revoke one of the user's own keys (another user's key is reported as not found). The revocation and its
    ``apikey.revoked.v1`` are one transaction; revoking a revoked key changes nothing and records nothing."""

    async def work(uow: UnitOfWork) -> ApiKeyPublic:
        owned = {k.id: k for k in await list_api_keys(db, user_id)}
        if key_id not in owned:
            raise NotFoundError(f"you have no API key {key_id!r}")
        was_active = owned[key_id].revoked_at is None
        revoked = await revoke_api_key(db, key_id)
        if was_active:
            uow.enqueue(
                ApiKeyRevoked(key_id=revoked.id, owner_id=revoked.owner_id, project_id=revoked.project_id)
            )
        return revoked

    return await _unit(db, relay).run(work)
