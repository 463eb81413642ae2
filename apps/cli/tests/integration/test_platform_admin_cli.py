"""stockade admin platform grant|revoke|list, through the real `stockade` app, and the demo state's role."""

import asyncio
import json

from typer.testing import CliRunner

from stockade.cli.demo import prepare_database
from stockade.cli.main import app
from stockade.identity import is_platform_admin, revoke_platform_admin
from stockade.identity.directory import find_user
from stockade.runtime.db import create_engine, session_factory

runner = CliRunner()


def _admin(db_url, *args):
    result = runner.invoke(app, ["admin", "--db-url", db_url, *args, "--json"])
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.strip().splitlines()]


def _is_admin(db_url, email):
    async def go():
        engine = create_engine(db_url)
        try:
            async with session_factory(engine)() as s:
                return await is_platform_admin(s, (await find_user(s, email)).id)
        finally:
            await engine.dispose()

    return asyncio.run(go())


def test_grant_list_revoke(tmp_path):
    url = f"sqlite+aiosqlite:///{tmp_path}/admin.db"
    _admin(url, "user", "create", "ops@example.org")
    assert _admin(url, "platform", "grant", "--user", "ops@example.org")[0]["changed"] is True
    assert _admin(url, "platform", "grant", "--user", "ops@example.org")[0]["changed"] is False
    assert [a["email"] for a in _admin(url, "platform", "list")] == ["ops@example.org"]
    assert _is_admin(url, "ops@example.org")
    assert _admin(url, "platform", "revoke", "--user", "ops@example.org")[0]["changed"] is True
    assert _admin(url, "platform", "list") == []
    assert not _is_admin(url, "ops@example.org")
    missing = runner.invoke(app, ["admin", "--db-url", url, "platform", "grant", "--user", "x@example.org"])
    assert missing.exit_code == 1 and "no user" in missing.output


def test_stockade_up_demo_user_is_a_platform_admin_and_a_revoke_holds(tmp_path):
    url = f"sqlite+aiosqlite:///{tmp_path}/stockade.db"
    info = prepare_database(tmp_path, url)
    assert info is not None and info.platform_admin
    assert _is_admin(url, info.user)

    async def revoke():
        engine = create_engine(url)
        try:
            async with session_factory(engine)() as s:
                await revoke_platform_admin(s, info.user)
                await s.commit()
        finally:
            await engine.dispose()

    asyncio.run(revoke())
    again = prepare_database(tmp_path, url)  # a later `stockade up`: the operator's revoke stands
    assert again is not None and not _is_admin(url, again.user)
