"""The platform administrator role: granted, read per request, revoked; the demo user holds it."""

import pytest

from stockade import identity
from stockade.identity.seed import seed_demo


async def test_grant_revoke_and_list(sessions):
    async with sessions() as s:
        user = await identity.create_user(s, "ops@example.org")
        other = await identity.create_user(s, "dev@example.org")
        assert not await identity.is_platform_admin(s, user.id)
        assert await identity.grant_platform_admin(s, "OPS@example.org")
        assert not await identity.grant_platform_admin(s, user.id)  # held already
        await s.commit()
    async with sessions() as s:  # a new session (a new request) sees the grant
        assert await identity.is_platform_admin(s, user.id)
        assert not await identity.is_platform_admin(s, other.id)
        assert [u.email for u in await identity.list_platform_admins(s)] == ["ops@example.org"]
        assert await identity.revoke_platform_admin(s, user.id)
        assert not await identity.revoke_platform_admin(s, user.id)
        await s.commit()
    async with sessions() as s:
        assert not await identity.is_platform_admin(s, user.id)
        with pytest.raises(identity.NotFoundError):
            await identity.grant_platform_admin(s, "nobody@example.org")
        await s.commit()


async def test_the_demo_user_is_a_platform_admin(sessions):
    seed = await seed_demo(sessions)
    assert seed is not None
    async with sessions() as s:
        assert await identity.is_platform_admin(s, seed.user.id)
