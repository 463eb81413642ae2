"""What the API and the console both do: change the catalogue or configurations and record the event in the
outbox in the same transaction, then wake the relay."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from stockade.contracts import ApiKeyRevoked, DbConfigActivated, ModelChanged
from stockade.identity import ApiKeyPublic, NotFoundError, list_api_keys, revoke_api_key
from stockade.model_api import catalogue, dbconfigs
from stockade.model_api.catalogue import Change, Upserted
from stockade.model_api.events import OutboxRelay, enqueue
from stockade.model_api.schemas import DbConfigPublic, ModelIn, ModelPublic


def _wake(relay: OutboxRelay | None) -> None:
    if relay is not None:
        relay.wake()


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
    config = await dbconfigs.active_config(db)

    def event(change: Change) -> ModelChanged:
        return ModelChanged(
            db_config_id=config.id,
            provider=provider,
            model_id=model.model_id,
            change=change,
            correlation_id=correlation_id,
            effective_at=effective_at,
        )

    saved = await catalogue.upsert_model(
        db, config.id, provider, model, actor=actor, event_for=event, effective_at=effective_at
    )
    _wake(relay)
    return config, saved


async def remove_model(
    db: AsyncSession,
    relay: OutboxRelay | None,
    provider: str,
    model_id: str,
    *,
    correlation_id: str | None = None,
) -> tuple[DbConfigPublic, ModelPublic]:
    config = await dbconfigs.active_config(db)

    def event(change: Change) -> ModelChanged:
        return ModelChanged(
            db_config_id=config.id,
            provider=provider,
            model_id=model_id,
            change=change,
            correlation_id=correlation_id,
        )

    gone = await catalogue.delete_model(db, config.id, provider, model_id, event_for=event)
    _wake(relay)
    return config, gone


async def activate(
    db: AsyncSession, relay: OutboxRelay | None, config_id: str, *, correlation_id: str | None = None
) -> DbConfigPublic:
    await dbconfigs.active_config(db)  # an empty database gets its default first

    def event(activated: DbConfigPublic) -> DbConfigActivated:
        return DbConfigActivated(
            db_config_id=activated.id,
            db_type=activated.db_type.value,
            name=activated.name,
            activated_at=activated.activated_at,
            correlation_id=correlation_id,
        )

    config = await dbconfigs.activate_config(db, config_id, event_for=event)
    _wake(relay)
    return config


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
        enqueue(db, ApiKeyRevoked(key_id=revoked.id, owner_id=revoked.owner_id))
        await db.commit()
        _wake(relay)
    return revoked
