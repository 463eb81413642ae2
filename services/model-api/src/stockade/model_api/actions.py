"""What the API and the console both do: change the catalogue or configurations, then publish the event."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from stockade.contracts import ApiKeyRevoked, DbConfigActivated, ModelChanged
from stockade.identity import ApiKeyPublic, NotFoundError, list_api_keys, revoke_api_key
from stockade.model_api import catalogue, dbconfigs
from stockade.model_api.catalogue import Upserted
from stockade.model_api.events import EventPublisher
from stockade.model_api.schemas import DbConfigPublic, ModelIn, ModelPublic


async def save_model(
    db: AsyncSession,
    publisher: EventPublisher,
    provider: str,
    model: ModelIn,
    *,
    actor: str,
    correlation_id: str | None = None,
) -> tuple[DbConfigPublic, Upserted]:
    config = await dbconfigs.active_config(db)
    saved = await catalogue.upsert_model(db, config.id, provider, model, actor=actor)
    await publisher.publish(
        ModelChanged(
            db_config_id=config.id,
            provider=provider,
            model_id=saved.model.model_id,
            change=saved.change,
            correlation_id=correlation_id,
        )
    )
    return config, saved


async def remove_model(
    db: AsyncSession,
    publisher: EventPublisher,
    provider: str,
    model_id: str,
    *,
    correlation_id: str | None = None,
) -> tuple[DbConfigPublic, ModelPublic]:
    config = await dbconfigs.active_config(db)
    gone = await catalogue.delete_model(db, config.id, provider, model_id)
    await publisher.publish(
        ModelChanged(
            db_config_id=config.id,
            provider=provider,
            model_id=model_id,
            change="deleted",
            correlation_id=correlation_id,
        )
    )
    return config, gone


async def activate(
    db: AsyncSession, publisher: EventPublisher, config_id: str, *, correlation_id: str | None = None
) -> DbConfigPublic:
    before = await dbconfigs.active_config(db)
    config = await dbconfigs.activate_config(db, config_id)
    if before.id != config.id:
        await publisher.publish(DbConfigActivated(db_config_id=config.id, correlation_id=correlation_id))
    return config


async def revoke_own_key(
    db: AsyncSession, publisher: EventPublisher, user_id: str, key_id: str
) -> ApiKeyPublic:
    """Revoke one of the user's own keys (another user's key is reported as not found)."""
    owned = {k.id: k for k in await list_api_keys(db, user_id)}
    if key_id not in owned:
        raise NotFoundError(f"you have no API key {key_id!r}")
    was_active = owned[key_id].revoked_at is None
    revoked = await revoke_api_key(db, key_id)
    if was_active:
        await publisher.publish(ApiKeyRevoked(key_id=revoked.id, owner_id=revoked.owner_id))
    return revoked
