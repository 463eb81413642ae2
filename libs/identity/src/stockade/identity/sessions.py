"""Browser sessions of the console: password sign-in, server-side session rows (the sign-in rate limit is in
``stockade.identity.sign_in_limit``).

Only the SHA-256 of a session token is stored. The CSRF token is derived from the session token
(HMAC-SHA256(token, "csrf")), so it needs no storage and ends with the session. Passwords are hashed and checked
on the hashing thread pool (``stockade.identity.passwords``), never on the event loop.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, ForeignKey, Index, String, and_, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column

from stockade.identity.directory import find_user
from stockade.identity.errors import InvalidInputError
from stockade.identity.models import UserPublic
from stockade.identity.passwords import (
    MIN_PASSWORD_LENGTH,
    hash_in_worker,
    hash_password,
    needs_rehash,
    verify_in_worker,
)
from stockade.identity.tables import ApiKey, Base, User
from stockade.runtime.db_types import UtcDateTime, new_id, utcnow

__all__ = [
    "ConsoleSession",
    "SessionPrincipal",
    "StartedSession",
    "csrf_matches",
    "csrf_token_for",
    "end_session",
    "end_user_sessions",
    "hash_token",
    "resolve_session",
    "set_password",
    "start_session",
    "verify_credentials",
]

TOKEN_BYTES = 32
LAST_SEEN_GRANULARITY = timedelta(minutes=1)
# Verified when the e-mail is unknown, so an unknown user costs the same argon2 work as a known one.
_DUMMY_PASSWORD_HASH = hash_password(secrets.token_urlsafe(16))


class ConsoleSession(Base):
    __tablename__ = "console_sessions"
    __table_args__ = (Index("ix_console_sessions_user_id", "user_id"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime())
    last_seen_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)


@dataclass(frozen=True, slots=True)
class StartedSession:
    """A new session: ``token`` goes into the cookie and is never stored."""

    session_id: str
    token: str
    csrf_token: str
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class SessionPrincipal:
    """A live session: whose, until when, and the CSRF token its forms must carry."""

    session_id: str
    user: UserPublic
    expires_at: datetime
    csrf_token: str


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def csrf_token_for(token: str) -> str:
    return hmac.new(token.encode(), b"csrf", hashlib.sha256).hexdigest()


def csrf_matches(token: str, presented: str | None) -> bool:
    return presented is not None and hmac.compare_digest(csrf_token_for(token), presented)


async def set_password(session: AsyncSession, user: str, password: str) -> int:
    """Set ``user``'s password and sign them out everywhere (every session and its prompt-api credential end:
    whoever held a session under the old password holds nothing now). Returns the number of sessions ended."""
    if len(password) < MIN_PASSWORD_LENGTH:
        raise InvalidInputError(f"a password needs at least {MIN_PASSWORD_LENGTH} characters")
    row = await find_user(session, user)
    row.password_hash = await hash_in_worker(password)
    await session.commit()
    return await end_user_sessions(session, row.id)


async def verify_credentials(session: AsyncSession, email: str, password: str) -> UserPublic | None:
    """The user whose e-mail and password match, else None (same argon2 work for unknown e-mails).

    A matching hash of an older kind (scrypt, or other argon2 parameters) is replaced by a current argon2id hash
    of the same password (upgrade on sign-in: the plaintext is only known now)."""
    row = (
        await session.execute(select(User).where(User.email == email.strip().lower()))
    ).scalar_one_or_none()
    if row is None or not row.password_hash:
        await verify_in_worker(password, _DUMMY_PASSWORD_HASH)
        return None
    if not await verify_in_worker(password, row.password_hash):
        return None
    user = UserPublic.model_validate(row)
    if needs_rehash(row.password_hash):
        row.password_hash = await hash_in_worker(password)
        await session.commit()
    return user


async def start_session(session: AsyncSession, user_id: str, ttl: timedelta) -> StartedSession:
    token = secrets.token_urlsafe(TOKEN_BYTES)
    now = utcnow()
    row = ConsoleSession(
        user_id=user_id, token_hash=hash_token(token), created_at=now, expires_at=now + ttl, last_seen_at=now
    )
    session.add(row)
    await session.commit()
    return StartedSession(row.id, token, csrf_token_for(token), row.expires_at)


async def resolve_session(
    session: AsyncSession, token: str | None, idle: timedelta | None = None
) -> SessionPrincipal | None:
    """The live session of ``token``: None for a missing, unknown, expired or signed-out one, and with ``idle``
    for one unused for longer than that (``last_seen_at`` moves at most once a minute)."""
    if not token or len(token) > 200:
        return None
    row = (
        await session.execute(
            select(ConsoleSession, User)
            .join(User, User.id == ConsoleSession.user_id)
            .where(ConsoleSession.token_hash == hash_token(token))
        )
    ).one_or_none()
    if row is None:
        return None
    live, user = row
    now = utcnow()
    if live.revoked_at is not None or live.expires_at <= now:
        return None
    if idle is not None and now - live.last_seen_at > idle + LAST_SEEN_GRANULARITY:
        return None
    principal = SessionPrincipal(
        live.id, UserPublic.model_validate(user), live.expires_at, csrf_token_for(token)
    )
    if now - live.last_seen_at > LAST_SEEN_GRANULARITY:  # at most one write a minute per session
        live.last_seen_at = now
        await session.commit()
    return principal


async def end_session(session: AsyncSession, token: str | None) -> bool:
    """Sign out: the session, and its short-lived prompt-api credential (``session_keys``), stop working on the
    next request. True if a live session was ended."""
    if not token:
        return False
    now = utcnow()
    result = await session.execute(
        update(ConsoleSession)
        .where(ConsoleSession.token_hash == hash_token(token), ConsoleSession.revoked_at.is_(None))
        .values(revoked_at=now)
    )
    ended = select(ConsoleSession.id).where(ConsoleSession.token_hash == hash_token(token))
    await _revoke_credentials(session, ApiKey.console_session_id.in_(ended), now)
    await session.commit()
    return bool(getattr(result, "rowcount", 0))


async def _revoke_credentials(session: AsyncSession, which: ColumnElement[bool], now: datetime) -> None:
    await session.execute(update(ApiKey).where(which, ApiKey.revoked_at.is_(None)).values(revoked_at=now))


async def end_user_sessions(session: AsyncSession, user_id: str) -> int:
    """Sign a user out everywhere (after a password change, say), with every session's credential."""
    now = utcnow()
    result = await session.execute(
        update(ConsoleSession)
        .where(
            ConsoleSession.user_id == user_id,
            ConsoleSession.revoked_at.is_(None),
            ConsoleSession.expires_at > now,
        )
        .values(revoked_at=now)
    )
    await _revoke_credentials(
        session, and_(ApiKey.owner_id == user_id, ApiKey.console_session_id.is_not(None)), now
    )
    await session.commit()
    return int(getattr(result, "rowcount", 0))
