"""Revoke a key from the command line: the revocation and its ``apikey.revoked.v1`` in one transaction.

``stockade admin key revoke`` writes the database directly, as model-api's console does: the key is revoked
through ``stockade.identity`` and the event is recorded in model-api's outbox in the same transaction, so one is
never committed without the other. model-api's outbox relay publishes it (within its ``OUTBOX__INTERVAL_S``; the
CLI cannot wake a relay in another process); guardrail-ingest then drops the key from its cache, and the audit
trail records it. The CLI holds no NATS credentials for this. Revoking a revoked key changes nothing and records
no event. The event's id is derived from the key id and the revocation time (the same revocation is the same
event wherever it is recorded).
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from stockade.contracts import ApiKeyRevoked
from stockade.identity import ApiKeyPublic, revoke_api_key
from stockade.identity.apikeys import find_api_key
from stockade.model_api.tables import OutboxEvent
from stockade.runtime.outbox import enqueue


def revocation_event(
    key_id: str, owner_id: str, revoked_at: datetime, project_id: str | None = None
) -> ApiKeyRevoked:
    event_id = uuid.uuid5(uuid.NAMESPACE_URL, f"stockade:apikey.revoked:{key_id}:{revoked_at.isoformat()}")
    return ApiKeyRevoked(
        event_id=event_id, occurred_at=revoked_at, key_id=key_id, owner_id=owner_id, project_id=project_id
    )


async def revoke(session: AsyncSession, key_id: str) -> tuple[ApiKeyPublic, bool]:
    """In the caller's unit of work: revoke the key and, if it was active, record its event in model-api's
    outbox. Returns the key and whether an event was recorded."""
    was_active = (await find_api_key(session, key_id)).revoked_at is None
    key = await revoke_api_key(session, key_id)
    if not was_active or key.revoked_at is None:
        return key, False
    enqueue(session, OutboxEvent, revocation_event(key.id, key.owner_id, key.revoked_at, key.project_id))
    return key, True
