"""Browser sessions of the console: password sign-in, server-side session rows, sign-in failure counting.

Only the SHA-256 of a session token is stored. The CSRF token is derived from the session token
(HMAC-SHA256(token, "csrf")), so it needs no storage and ends with the session. Sign-in failures are rows, so
the rate limit holds across replicas.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import ForeignKey, Index, Integer, String, delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column

from stockade.identity.db_types import UtcDateTime, new_id, utcnow
from stockade.identity.directory import find_user
from stockade.identity.errors import InvalidInputError
from stockade.identity.models import UserPublic
from stockade.identity.passwords import hash_password, verify_password
from stockade.identity.tables import Base, User

TOKEN_BYTES = 32
MIN_PASSWORD_LENGTH = 8
LAST_SEEN_GRANULARITY = timedelta(minutes=1)
# Verified when the e-mail is unknown, so an unknown user costs the same scrypt work as a known one.
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


class SignInFailure(Base):
    __tablename__ = "sign_in_failures"
    __table_args__ = (
        Index("ix_sign_in_failures_email", "email"),
        Index("ix_sign_in_failures_client", "client"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    email: Mapped[str] = mapped_column(String(320))
    client: Mapped[str] = mapped_column(String(64))
    failed_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


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


@dataclass(frozen=True, slots=True)
class SignInBudget:
    """Whether another sign-in attempt is allowed now; if not, how many seconds until it is."""

    allowed: bool
    retry_after_s: int


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def csrf_token_for(token: str) -> str:
    return hmac.new(token.encode(), b"csrf", hashlib.sha256).hexdigest()


def csrf_matches(token: str, presented: str | None) -> bool:
    return presented is not None and hmac.compare_digest(csrf_token_for(token), presented)


async def set_password(session: AsyncSession, user: str, password: str) -> None:
    if len(password) < MIN_PASSWORD_LENGTH:
        raise InvalidInputError(f"a password needs at least {MIN_PASSWORD_LENGTH} characters")
    row = await find_user(session, user)
    row.password_hash = hash_password(password)
    await session.commit()


async def verify_credentials(session: AsyncSession, email: str, password: str) -> UserPublic | None:
    """The user whose e-mail and password match, else None (same scrypt work for unknown e-mails)."""
    row = (
        await session.execute(select(User).where(User.email == email.strip().lower()))
    ).scalar_one_or_none()
    if row is None or not row.password_hash:
        verify_password(password, _DUMMY_PASSWORD_HASH)
        return None
    return UserPublic.model_validate(row) if verify_password(password, row.password_hash) else None


async def start_session(session: AsyncSession, user_id: str, ttl: timedelta) -> StartedSession:
    token = secrets.token_urlsafe(TOKEN_BYTES)
    now = utcnow()
    row = ConsoleSession(
        user_id=user_id, token_hash=hash_token(token), created_at=now, expires_at=now + ttl, last_seen_at=now
    )
    session.add(row)
    await session.commit()
    return StartedSession(row.id, token, csrf_token_for(token), row.expires_at)


async def resolve_session(session: AsyncSession, token: str | None) -> SessionPrincipal | None:
    """The live session of ``token``: None for a missing, unknown, expired or signed-out one."""
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
    principal = SessionPrincipal(
        live.id, UserPublic.model_validate(user), live.expires_at, csrf_token_for(token)
    )
    if now - live.last_seen_at > LAST_SEEN_GRANULARITY:  # at most one write a minute per session
        live.last_seen_at = now
        await session.commit()
    return principal


async def end_session(session: AsyncSession, token: str | None) -> bool:
    """Sign out: the session stops working on the next request. True if a live session was ended."""
    if not token:
        return False
    result = await session.execute(
        update(ConsoleSession)
        .where(ConsoleSession.token_hash == hash_token(token), ConsoleSession.revoked_at.is_(None))
        .values(revoked_at=utcnow())
    )
    await session.commit()
    return bool(getattr(result, "rowcount", 0))


async def end_user_sessions(session: AsyncSession, user_id: str) -> int:
    """Sign a user out everywhere (after a password change, say)."""
    result = await session.execute(
        update(ConsoleSession)
        .where(
            ConsoleSession.user_id == user_id,
            ConsoleSession.revoked_at.is_(None),
            ConsoleSession.expires_at > utcnow(),
        )
        .values(revoked_at=utcnow())
    )
    await session.commit()
    return int(getattr(result, "rowcount", 0))


async def sign_in_budget(
    session: AsyncSession,
    email: str,
    client: str,
    *,
    window: timedelta,
    max_per_email: int,
    max_per_client: int,
) -> SignInBudget:
    """Count recent failures per e-mail and per client address; refuse once either reaches its limit."""
    since = utcnow() - window
    email = email.strip().lower()[:320]
    for column, value, limit in (
        (SignInFailure.email, email, max_per_email),
        (SignInFailure.client, client[:64], max_per_client),
    ):
        count, oldest = (
            await session.execute(
                select(func.count(), func.min(SignInFailure.failed_at)).where(
                    column == value, SignInFailure.failed_at > since
                )
            )
        ).one()
        if count >= limit:
            oldest_at = oldest if isinstance(oldest, datetime) else utcnow()
            wait = (oldest_at + window - utcnow()).total_seconds()
            return SignInBudget(False, max(1, int(wait) + 1))
    return SignInBudget(True, 0)


async def record_sign_in_failure(session: AsyncSession, email: str, client: str) -> None:
    session.add(SignInFailure(email=email.strip().lower()[:320], client=client[:64], failed_at=utcnow()))
    await session.commit()


async def clear_sign_in_failures(session: AsyncSession, email: str, *, older_than: timedelta) -> None:
    """After a successful sign-in: forget the e-mail's failures, and prune every row past the window."""
    await session.execute(
        delete(SignInFailure).where(
            (SignInFailure.email == email.strip().lower()) | (SignInFailure.failed_at < utcnow() - older_than)
        )
    )
    await session.commit()
