"""The platform administrator role: who may change platform-wide settings (docs/permissions.md).

Read per request like every other permission (spec 5.1.4): a revoked role stops working on the next request.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from stockade.identity.directory import find_user
from stockade.identity.models import UserPublic
from stockade.identity.tables import PlatformAdmin, User


async def is_platform_admin(session: AsyncSession, user_id: str) -> bool:
    found = await session.execute(select(PlatformAdmin.user_id).where(PlatformAdmin.user_id == user_id))
    return found.first() is not None


async def grant_platform_admin(session: AsyncSession, user: str) -> bool:
    """Give ``user`` (id or e-mail) the role; False when they held it already. The caller commits."""
    row = await find_user(session, user)
    if await is_platform_admin(session, row.id):
        return False
    session.add(PlatformAdmin(user_id=row.id))
    await session.flush()
    return True


async def revoke_platform_admin(session: AsyncSession, user: str) -> bool:
    """Take the role from ``user`` (id or e-mail); False when they did not hold it. The caller commits."""
    row = await find_user(session, user)
    held = await session.get(PlatformAdmin, row.id)
    if held is None:
        return False
    await session.delete(held)
    await session.flush()
    return True


async def list_platform_admins(session: AsyncSession) -> list[UserPublic]:
    rows = await session.execute(
        select(User).join(PlatformAdmin, PlatformAdmin.user_id == User.id).order_by(User.email)
    )
    return [UserPublic.model_validate(u) for u in rows.scalars().all()]
