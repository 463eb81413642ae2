"""The console's sign-in rate limit: failed attempts per e-mail and per client address within a window.

Failures are rows (``sign_in_failures``), so the limit holds across replicas. :func:`reserve_sign_in_attempt`
makes it atomic: an attempt is written and committed as a failure *before* the password is checked, and only
then are the failures in the window counted, its own included. Every attempt sees at least the attempts
committed before it, so of any number of concurrent attempts at most the remaining budget goes on to the
password check; the others are refused (429) and their rows removed again, so a refused attempt does not extend
the lockout. A successful sign-in clears the e-mail's failures (its own reservation with them); a failed one
leaves its reservation as the recorded failure.

Counting first and recording after the password check (the earlier :func:`sign_in_budget` followed by
:func:`record_sign_in_failure`) lets every attempt that arrives before the first failure is recorded through:
100 parallel guesses all got to the password check with a limit of 5.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypedDict, Unpack

from sqlalchemy import Index, Integer, String, delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column

from stockade.identity.tables import Base
from stockade.runtime.db_types import UtcDateTime, utcnow

EMPTY_EMAIL = "(empty)"


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
class SignInBudget:
    """Whether another sign-in attempt is allowed now; if not, how many seconds until it is."""

    allowed: bool
    retry_after_s: int


class SignInLimits(TypedDict):
    """The keywords of :func:`reserve_sign_in_attempt` and :func:`sign_in_budget`: failures allowed per
    e-mail and per client address within ``window``."""

    window: timedelta
    max_per_email: int
    max_per_client: int


def _email_key(email: str) -> str:
    return email.strip().lower()[:320] or EMPTY_EMAIL


async def _over_limit(
    session: AsyncSession,
    email: str,
    client: str,
    since: datetime,
    window: timedelta,
    limits: tuple[int, int],
) -> SignInBudget:
    for column, value, limit in (
        (SignInFailure.email, email, limits[0]),
        (SignInFailure.client, client, limits[1]),
    ):
        count, oldest = (
            await session.execute(
                select(func.count(), func.min(SignInFailure.failed_at)).where(
                    column == value, SignInFailure.failed_at > since
                )
            )
        ).one()
        if count > limit:
            oldest_at = oldest if isinstance(oldest, datetime) else utcnow()
            wait = (oldest_at + window - utcnow()).total_seconds()
            return SignInBudget(False, max(1, int(wait) + 1))
    return SignInBudget(True, 0)


async def reserve_sign_in_attempt(
    session: AsyncSession, email: str, client: str, **limits: Unpack[SignInLimits]
) -> SignInBudget:
    """Record this attempt as a failure (committed), then count: allowed while at most ``max_per_email``
    failures of the e-mail and ``max_per_client`` of the client fall in ``window``, this one included. A refused
    attempt's row is removed again. After an allowed attempt: :func:`clear_sign_in_failures` on success, nothing
    on failure (the reservation is the failure)."""
    window, counts = limits["window"], (limits["max_per_email"], limits["max_per_client"])
    key, client = _email_key(email), client[:64]
    now = utcnow()
    row = SignInFailure(email=key, client=client, failed_at=now)
    session.add(row)
    await session.flush()
    attempt_id = row.id
    await session.commit()
    budget = await _over_limit(session, key, client, now - window, window, counts)
    if not budget.allowed:
        await session.execute(delete(SignInFailure).where(SignInFailure.id == attempt_id))
    await session.commit()
    return budget


async def sign_in_budget(
    session: AsyncSession, email: str, client: str, **limits: Unpack[SignInLimits]
) -> SignInBudget:
    """Read-only: would one more failure fit? (Not atomic with the attempt: use reserve_sign_in_attempt.)"""
    window = limits["window"]
    counts = (limits["max_per_email"] - 1, limits["max_per_client"] - 1)
    return await _over_limit(session, _email_key(email), client[:64], utcnow() - window, window, counts)


async def record_sign_in_failure(session: AsyncSession, email: str, client: str) -> None:
    session.add(SignInFailure(email=_email_key(email), client=client[:64], failed_at=utcnow()))
    await session.commit()


async def clear_sign_in_failures(session: AsyncSession, email: str, *, older_than: timedelta) -> None:
    """After a successful sign-in: forget the e-mail's failures, and prune every row past the window."""
    await session.execute(
        delete(SignInFailure).where(
            (SignInFailure.email == _email_key(email)) | (SignInFailure.failed_at < utcnow() - older_than)
        )
    )
    await session.commit()
