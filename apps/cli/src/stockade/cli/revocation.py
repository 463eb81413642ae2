"""Announce a key revoked from the command line: ``apikey.revoked.v1``, as model-api's console does.

``stockade admin key revoke`` writes the database directly. Without the event, guardrail-ingest would trust a
cached ingest key until its cache expired, and the revocation would be missing from the audit trail. The event's
id is derived from the key id and the revocation time, so announcing the same revocation twice stores it once
(JetStream's duplicate window, and the audit trail's idempotent write).
"""

from __future__ import annotations

import asyncio
import os
import uuid
from datetime import datetime
from typing import Annotated, Any

import typer

from stockade.contracts import ApiKeyRevoked
from stockade.identity import ApiKeyPublic
from stockade.runtime.nats import probe_connect

CONNECT_TIMEOUT_S = 3.0
AnnounceOpt = Annotated[
    bool,
    typer.Option(
        "--announce/--no-announce",
        help="Publish apikey.revoked.v1 (guardrail-ingest drops a cached ingest key; the audit trail).",
    ),
]
UrlOpt = Annotated[
    str | None, typer.Option("--nats-url", help="NATS URL (default NATS_URL or stockade up's).")
]
UserOpt = Annotated[
    str | None, typer.Option("--nats-user", help="NATS user allowed to publish it: model-api.")
]
PasswordOpt = Annotated[
    str | None,
    typer.Option("--nats-password", envvar="STOCKADE_NATS_PASSWORD", help="Password of --nats-user."),
]


def revocation_event(
    key_id: str, owner_id: str, revoked_at: datetime, project_id: str | None = None
) -> ApiKeyRevoked:
    event_id = uuid.uuid5(uuid.NAMESPACE_URL, f"stockade:apikey.revoked:{key_id}:{revoked_at.isoformat()}")
    return ApiKeyRevoked(
        event_id=event_id, occurred_at=revoked_at, key_id=key_id, owner_id=owner_id, project_id=project_id
    )


async def announce(url: str, event: ApiKeyRevoked, user: str | None, password: str | None) -> None:
    """Publish ``event`` to JetStream (stream IDENTITY); raises when NATS or the stream does not answer."""
    options: dict[str, Any] = {"user": user, "password": password} if user else {}
    nc = await probe_connect(url, timeout_s=CONNECT_TIMEOUT_S, **options)
    try:
        await nc.jetstream().publish(
            event.subject, event.to_bytes(), headers=event.headers(), timeout=CONNECT_TIMEOUT_S
        )
    finally:
        await nc.close()


def announce_or_warn(key: ApiKeyPublic, url: str | None, user: str | None, password: str | None) -> bool:
    """Announce a revoked key; on failure warn on stderr and return False (the revocation holds)."""
    if key.revoked_at is None:
        return False
    event = revocation_event(key.id, key.owner_id, key.revoked_at, key.project_id)
    target = url or os.environ.get("NATS_URL") or "nats://127.0.0.1:14222"
    try:
        asyncio.run(announce(target, event, user, password))
    except Exception as exc:
        typer.echo(
            f"warning: apikey.revoked.v1 not published ({type(exc).__name__}: {exc}); guardrail-ingest may "
            "accept this key until its key cache expires (INGEST__KEY_CACHE_S, 15 s)",
            err=True,
        )
        return False
    return True
