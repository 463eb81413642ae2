"""The console session's short-lived credential: an API key that acts as the signed-in user on prompt-api.

The console reads and changes prompts and skills through prompt-api's public HTTP API, so prompt-api stays the
one authority (spec 5.1). A signed-in user does not paste a key: for each console session the console holds a
credential that *is* an API key of that user (a row of ``api_keys``, checked by :func:`stockade.identity.authenticate`
like any other key), with three differences:

* it expires: ``expires_at`` is :data:`CREDENTIAL_TTL` after it was made, never after the session's own end;
  past it the key fails like a revoked one (401, or the uniform 404 of the read endpoint, spec 7);
* it belongs to one console session (``console_session_id``) and is revoked when that session ends (sign-out,
  sign-out everywhere: :func:`stockade.identity.sessions.end_session`);
* its secret is never stored, not even sealed: it is HMAC-SHA256(session token, key id), so only a request that
  carries the session cookie can rebuild it. The server keeps the SHA-256 of the key (as for every key) and the
  SHA-256 of the session token, so a copy of the database opens nothing.

It acts as its owner and nothing more: prompt-api resolves membership and the approver tag per request from the
owner's current rows. Its scope is write on an on-prem deployment, which a signed-in user can give any key of
their own on the API keys page, and read on a hosted one (``effective_scope``). It is never listed with the
user's keys and opens nothing in guardrail-ingest (not an ingest key).
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from stockade.identity import keys
from stockade.identity.tables import ApiKey, Deployment, Scope
from stockade.runtime.db_types import utcnow

CREDENTIAL_TTL = timedelta(minutes=10)
# A credential with less than this left is not handed out again: a page's calls never straddle its expiry.
RENEW_BEFORE = timedelta(minutes=2)
_CONTEXT = b"stockade console credential:"


def _secret(session_token: str, key_id: str) -> str:
    digest = hmac.new(session_token.encode(), _CONTEXT + key_id.encode(), hashlib.sha256).digest()
    number = int.from_bytes(digest, "big")
    return "".join(keys.ALPHABET[(number // 62**i) % 62] for i in range(keys.SECRET_LEN))


def credential_key(session_token: str, key_id: str) -> str:
    """The plaintext of the session's credential ``key_id``, rebuilt from the session token."""
    body = keys.PREFIX + key_id + _secret(session_token, key_id)
    return body + keys.checksum(body)


async def session_credential(
    session: AsyncSession,
    *,
    console_session_id: str,
    user_id: str,
    session_token: str,
    session_expires_at: datetime,
    deployment: Deployment,
    now: datetime | None = None,
    ttl: timedelta = CREDENTIAL_TTL,
) -> str:
    """The plaintext of the console session's live credential; a new one (and the expired ones of this session
    deleted) when none has more than :data:`RENEW_BEFORE` left. The caller has resolved the session from
    ``session_token`` (``resolve_session``): ``console_session_id``, ``user_id`` and the expiry are that
    session's, so the credential can only act as the user who signed in."""
    now = now or utcnow()
    live = (
        await session.execute(
            select(ApiKey.id, ApiKey.key_hash)
            .where(
                ApiKey.console_session_id == console_session_id,
                ApiKey.owner_id == user_id,
                ApiKey.revoked_at.is_(None),
                ApiKey.expires_at > now + RENEW_BEFORE,
            )
            .order_by(ApiKey.expires_at.desc())
            .limit(1)
        )
    ).one_or_none()
    if live is not None:
        plaintext = credential_key(session_token, live.id)
        if keys.hashes_match(live.key_hash, keys.hash_key(plaintext)):
            await session.commit()
            return plaintext
    await session.execute(
        delete(ApiKey).where(ApiKey.console_session_id == console_session_id, ApiKey.expires_at <= now)
    )
    generated = keys.generate_key()  # only its random id is used: the secret comes from the session token
    plaintext = credential_key(session_token, generated.key_id)
    session.add(
        ApiKey(
            id=generated.key_id,
            owner_id=user_id,
            key_hash=keys.hash_key(plaintext),
            scope=Scope.WRITE.value if deployment is Deployment.ONPREM else None,
            deployment=deployment.value,
            last_four=plaintext[-4:],
            created_at=now,
            expires_at=min(now + ttl, session_expires_at),
            console_session_id=console_session_id,
        )
    )
    await session.commit()
    return plaintext
