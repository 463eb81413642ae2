"""Console sessions: password sign-in, token hashing, expiry, sign-out, CSRF token, sign-in failure budget."""

from datetime import timedelta

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import select

from stockade.identity import create_user
from stockade.identity.sessions import (
    ConsoleSession,
    csrf_matches,
    end_session,
    end_user_sessions,
    hash_token,
    resolve_session,
    set_password,
    start_session,
    verify_credentials,
)
from stockade.identity.sign_in_limit import clear_sign_in_failures, record_sign_in_failure, sign_in_budget
from stockade.identity.tables import Base


async def test_schema_of_the_new_tables_matches_the_migration(sessions):
    async with sessions() as s:
        conn = await s.connection()

        def run(sync_conn):
            ctx = MigrationContext.configure(
                sync_conn,
                opts={
                    "compare_type": True,
                    "include_name": lambda n, t, _p: t != "table" or n in Base.metadata.tables,
                },
            )
            return compare_metadata(ctx, Base.metadata)

        assert await conn.run_sync(run) == []


async def test_sign_in_session_lifecycle(sessions):
    async with sessions() as s:
        user = await create_user(s, "Ada@Example.org", "correct horse battery")
        assert await verify_credentials(s, "ada@example.org", "wrong password") is None
        assert await verify_credentials(s, "nobody@example.org", "correct horse battery") is None
        assert (await verify_credentials(s, " ADA@example.org ", "correct horse battery")).id == user.id

        started = await start_session(s, user.id, timedelta(hours=1))
        stored = (await s.execute(select(ConsoleSession.token_hash))).scalars().all()
        assert stored == [hash_token(started.token)] and started.token not in stored

        live = await resolve_session(s, started.token)
        assert live is not None and live.user.email == "ada@example.org"
        assert csrf_matches(started.token, live.csrf_token)
        assert not csrf_matches(started.token, "0" * 64) and not csrf_matches(started.token, None)
        assert await resolve_session(s, started.token + "x") is None
        row = (await s.execute(select(ConsoleSession))).scalar_one()
        row.last_seen_at -= timedelta(minutes=5)
        await s.commit()
        stale = row.last_seen_at
        assert (await resolve_session(s, started.token)) is not None
        await s.refresh(row)
        assert row.last_seen_at > stale + timedelta(minutes=4)

        assert await end_session(s, started.token) is True
        assert await resolve_session(s, started.token) is None
        assert await end_session(s, started.token) is False

        expired = await start_session(s, user.id, timedelta(seconds=-1))
        assert await resolve_session(s, expired.token) is None

        a = await start_session(s, user.id, timedelta(hours=1))
        b = await start_session(s, user.id, timedelta(hours=1))
        assert await end_user_sessions(s, user.id) == 2
        assert await resolve_session(s, a.token) is None and await resolve_session(s, b.token) is None

        await set_password(s, user.id, "a new long password")
        assert await verify_credentials(s, "ada@example.org", "correct horse battery") is None
        assert await verify_credentials(s, "ada@example.org", "a new long password") is not None


async def test_password_lifecycle_minimum_change_and_idle_end(sessions):
    """Finding L6: every way a password is set needs 8 characters; a change signs the user out everywhere
    (sessions and their prompt-api credentials); a session unused past the idle limit ends."""
    from stockade.identity import InvalidInputError
    from stockade.identity.access import authenticate
    from stockade.identity.session_keys import session_credential
    from stockade.identity.tables import Deployment

    async with sessions() as s:
        for short in ("", "1234567"):
            with pytest.raises(InvalidInputError):
                await create_user(s, f"short{len(short)}@example.org", short)
            await s.rollback()
        user = await create_user(s, "lin@example.org", "eight chr")
        with pytest.raises(InvalidInputError):
            await set_password(s, user.id, "short")
        kept = await start_session(s, user.id, timedelta(hours=1))
        other = await start_session(s, user.id, timedelta(hours=1))
        credential = await session_credential(
            s,
            console_session_id=other.session_id,
            user_id=user.id,
            session_token=other.token,
            session_expires_at=other.expires_at,
            deployment=Deployment.ONPREM,
        )
        assert await authenticate(s, credential, Deployment.ONPREM) is not None
        assert await set_password(s, user.id, "another long one") == 2
        assert await resolve_session(s, kept.token) is None and await resolve_session(s, other.token) is None
        assert await authenticate(s, credential, Deployment.ONPREM) is None

        idle = await start_session(s, user.id, timedelta(hours=12))
        assert await resolve_session(s, idle.token, timedelta(minutes=30)) is not None
        row = (
            await s.execute(select(ConsoleSession).where(ConsoleSession.id == idle.session_id))
        ).scalar_one()
        row.last_seen_at -= timedelta(minutes=45)
        await s.commit()
        assert await resolve_session(s, idle.token, timedelta(hours=1)) is not None  # within the limit
        await s.refresh(row)  # that use moved last_seen_at to now
        row.last_seen_at -= timedelta(minutes=90)
        await s.commit()
        assert await resolve_session(s, idle.token, timedelta(hours=1)) is None
        assert await resolve_session(s, idle.token) is not None  # no idle limit asked: the absolute one holds


async def test_sign_in_budget_per_email_and_per_client(sessions):
    window = timedelta(minutes=15)
    limits = {"window": window, "max_per_email": 3, "max_per_client": 5}
    async with sessions() as s:
        for _ in range(3):
            assert (await sign_in_budget(s, "eve@example.org", "10.0.0.1", **limits)).allowed
            await record_sign_in_failure(s, "eve@example.org", "10.0.0.1")
        refused = await sign_in_budget(s, "EVE@example.org", "10.0.0.9", **limits)
        assert not refused.allowed and 0 < refused.retry_after_s <= 15 * 60 + 1
        # another e-mail from the same address still has budget until the address limit
        assert (await sign_in_budget(s, "bob@example.org", "10.0.0.1", **limits)).allowed
        for _ in range(2):
            await record_sign_in_failure(s, "bob@example.org", "10.0.0.1")
        assert not (await sign_in_budget(s, "carol@example.org", "10.0.0.1", **limits)).allowed
        await clear_sign_in_failures(s, "eve@example.org", older_than=window)
        assert (await sign_in_budget(s, "eve@example.org", "10.0.0.9", **limits)).allowed
