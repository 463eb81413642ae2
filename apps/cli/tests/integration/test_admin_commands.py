"""stockade admin: drive identity from the command line (--json), on SQLite and on real PostgreSQL."""

import asyncio
import json
import os
import subprocess
import sys

import pytest
from sqlalchemy import text
from typer.testing import CliRunner

from stockade.cli.admin import app
from stockade.identity import Deployment, Scope
from stockade.identity.access import authenticate, can_publish, project_access
from stockade.runtime.db import create_engine, session_factory

runner = CliRunner()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path}/admin.db"
    return request.getfixturevalue("postgres_database")


def run(db_url, *args, ok=True):
    result = runner.invoke(app, ["--db-url", db_url, *args])
    if ok:
        assert result.exit_code == 0, result.output
    return result


def one(db_url, *args):
    out = run(db_url, *args, "--json").stdout.strip().splitlines()
    assert len(out) == 1, out
    return json.loads(out[0])


def _in_db(db_url, fn):
    async def go():
        engine = create_engine(db_url)
        try:
            async with session_factory(engine)() as s:
                return await fn(s)
        finally:
            await engine.dispose()

    return asyncio.run(go())


def test_full_admin_flow(db_url):
    org = one(db_url, "org", "create", "acme")
    user = one(db_url, "user", "create", "Dev@Example.com")
    assert set(org) >= {"id"} and user["email"] == "dev@example.com"
    project = one(db_url, "project", "create", "--org", "acme", "prompts", "--flow", "manual-review")
    assert project["flow"] == "manual-review" and project["organisation_id"] == org["id"]
    one(db_url, "member", "add", "--project", "prompts", "--user", "dev@example.com")
    key = one(db_url, "key", "create", "--user", user["id"], "--scope", "write")
    assert set(key) >= {"id", "key", "scope"} and key["scope"] == "write" and key["key"].startswith("stk_")

    async def check(s):
        principal = await authenticate(s, key["key"], Deployment.ONPREM)
        return principal, can_publish(principal, await project_access(s, principal.owner_id, project["id"]))

    principal, decision = _in_db(db_url, check)
    assert principal.scope is Scope.WRITE and not decision.allowed  # manual review without approver
    one(db_url, "tag", "grant", "approver", "--project", project["id"], "--user", "dev@example.com")
    assert _in_db(db_url, check)[1].allowed
    one(db_url, "tag", "revoke", "approver", "--project", "prompts", "--user", user["id"])
    assert not _in_db(db_url, check)[1].allowed
    assert one(db_url, "project", "set-flow", "prompts", "direct")["flow"] == "direct"
    assert _in_db(db_url, check)[1].allowed
    assert one(db_url, "member", "remove", "--project", "prompts", "--user", user["id"])["removed"] is True
    assert not _in_db(db_url, check)[1].allowed

    legacy = one(db_url, "key", "create", "--user", "dev@example.com", "--legacy")
    hosted = one(
        db_url, "key", "create", "--user", "dev@example.com", "--scope", "write", "--deployment", "hosted"
    )
    assert legacy["scope"] is None and hosted["scope"] is None and hosted["deployment"] == "hosted"
    listed = [
        json.loads(line)
        for line in run(db_url, "key", "list", "--user", "dev@example.com", "--json").stdout.splitlines()
    ]
    assert {k["id"] for k in listed} == {key["id"], legacy["id"], hosted["id"]}
    assert all("key" not in k and k["display"].startswith("stk_") for k in listed)
    assert one(db_url, "key", "revoke", key["id"])["revoked_at"]
    assert _in_db(db_url, lambda s: authenticate(s, key["key"], Deployment.ONPREM)) is None
    listed = {
        json.loads(line)["id"]: json.loads(line)
        for line in run(db_url, "key", "list", "--user", user["id"], "--json").stdout.splitlines()
    }
    assert listed[key["id"]]["state"] == "revoked"

    # only the hash is stored
    async def dump(s):
        return repr((await s.execute(text("SELECT * FROM api_keys"))).all())

    stored = _in_db(db_url, dump)
    assert key["key"] not in stored and legacy["key"] not in stored


def test_errors_exit_1_with_a_json_error(db_url):
    one(db_url, "org", "create", "acme")
    dup = run(db_url, "--json", "org", "create", "acme", ok=False)
    assert dup.exit_code == 1 and json.loads(dup.stdout)["error"]["code"] == "conflict"
    missing = run(db_url, "project", "create", "--org", "nope", "p", ok=False)
    assert missing.exit_code == 1 and "no organisation" in missing.output
    bad = run(db_url, "project", "create", "--org", "acme", "p", "--flow", "yolo", ok=False)
    assert bad.exit_code == 1
    one(db_url, "user", "create", "u@example.com")
    assert (
        run(db_url, "key", "create", "--user", "u@example.com", "--scope", "admin", ok=False).exit_code == 1
    )
    assert run(db_url, "key", "revoke", "000000000000", ok=False).exit_code == 1


def test_password_from_stdin_is_hashed(tmp_path):
    url = f"sqlite+aiosqlite:///{tmp_path}/pw.db"
    result = runner.invoke(
        app,
        ["--db-url", url, "user", "create", "pw@example.com", "--password-stdin", "--json"],
        input="s3cret-pass\n",
    )
    assert result.exit_code == 0, result.output

    async def row(s):
        return (await s.execute(text("SELECT password_hash FROM users"))).scalar_one()

    stored = _in_db(url, row)
    assert stored.startswith("$argon2id$") and "s3cret-pass" not in stored


def test_stockade_admin_acts_on_the_directory_it_runs_in(tmp_path):
    """The real command: without --db-url it uses ./.stockade/stockade.db, like `stockade up`."""
    env = {k: v for k, v in os.environ.items() if k != "STOCKADE_DB_URL"}
    cmd = [
        sys.executable,
        "-c",
        "from stockade.cli.main import main; main()",
        "admin",
        "org",
        "create",
        "here",
        "--json",
    ]
    out = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["id"]
    assert (tmp_path / ".stockade" / "stockade.db").exists()


def test_ingest_key_is_bound_to_a_project_of_its_owner_and_opens_nothing_else(db_url):
    from stockade.identity import keys, verify_ingest_key

    one(db_url, "org", "create", "acme")
    one(db_url, "user", "create", "dev@example.com")
    one(db_url, "user", "create", "outsider@example.com")
    project = one(db_url, "project", "create", "--org", "acme", "agents")
    one(db_url, "member", "add", "--project", "agents", "--user", "dev@example.com")
    key = one(
        db_url, "key", "create", "--user", "dev@example.com", "--scope", "ingest", "--project", "agents"
    )
    assert key["scope"] == "ingest" and key["project_id"] == project["id"] and key["key"].startswith("stk_")
    no_project = run(db_url, "key", "create", "--user", "dev@example.com", "--scope", "ingest", ok=False)
    assert no_project.exit_code == 1 and "needs a project" in no_project.output
    outsider = run(
        db_url,
        "key",
        "create",
        "--user",
        "outsider@example.com",
        "--scope",
        "ingest",
        "--project",
        "agents",
        ok=False,
    )
    assert outsider.exit_code == 1 and "not a member" in outsider.output

    digest = keys.hash_key(key["key"])
    check = _in_db(db_url, lambda s: verify_ingest_key(s, key["id"], digest))
    assert check.valid and check.project_id == project["id"]
    assert _in_db(db_url, lambda s: authenticate(s, key["key"], Deployment.ONPREM)) is None  # not for prompts
    assert not _in_db(db_url, lambda s: verify_ingest_key(s, key["id"], "0" * 64)).valid
    one(db_url, "member", "remove", "--project", "agents", "--user", "dev@example.com")
    assert "no longer a member" in _in_db(db_url, lambda s: verify_ingest_key(s, key["id"], digest)).reason
    one(db_url, "key", "revoke", key["id"])
    assert _in_db(db_url, lambda s: verify_ingest_key(s, key["id"], digest)).reason == "the key is revoked"


@pytest.mark.nats
def test_key_revoke_records_its_event_once_for_model_apis_relay(tmp_path, nats_server_factory):
    """The revocation and its apikey.revoked.v1 are one transaction (model-api's outbox); the CLI holds no NATS
    credentials: model-api's relay publishes the event, once, even when NATS was away at the revocation."""
    import nats

    from stockade.contracts import ApiKeyRevoked
    from stockade.model_api.tables import OutboxEvent
    from stockade.runtime.outbox import OutboxRelay, given_connection
    from stockade.runtime.settings import OutboxSettings

    db_url = f"sqlite+aiosqlite:///{tmp_path}/admin.db"
    url = str(nats_server_factory().url)

    async def relay_then_read() -> list[ApiKeyRevoked]:
        """What model-api's relay does with its outbox, then the IDENTITY stream's events."""
        nc = await nats.connect(url)
        engine = create_engine(db_url)
        try:
            await OutboxRelay(
                session_factory(engine), OutboxEvent, given_connection(nc), OutboxSettings()
            ).flush()
            js = nc.jetstream()
            count = (await js.stream_info("IDENTITY")).state.messages
            return [
                ApiKeyRevoked.model_validate_json((await js.get_msg("IDENTITY", seq)).data)
                for seq in range(1, count + 1)
            ]
        finally:
            await nc.close()
            await engine.dispose()

    user = one(db_url, "user", "create", "dev@example.com")
    key = one(db_url, "key", "create", "--user", "dev@example.com")
    assert one(db_url, "key", "revoke", key["id"])["announced"] is True  # NATS plays no part here
    assert one(db_url, "key", "revoke", key["id"])["announced"] is False  # revoked already: no second event
    events = asyncio.run(relay_then_read())
    assert [(e.key_id, e.owner_id, e.project_id) for e in events] == [(key["id"], user["id"], None)]  # once

    # an ingest key's revocation names its project: the audit trail files it there
    one(db_url, "org", "create", "acme")
    project = one(db_url, "project", "create", "--org", "acme", "agents")
    one(db_url, "member", "add", "--project", "agents", "--user", "dev@example.com")
    ingest = one(
        db_url, "key", "create", "--user", "dev@example.com", "--scope", "ingest", "--project", "agents"
    )
    assert one(db_url, "key", "revoke", ingest["id"])["announced"] is True
    events = asyncio.run(relay_then_read())
    assert [(e.key_id, e.project_id) for e in events[1:]] == [(ingest["id"], project["id"])]


def test_set_password_needs_eight_characters_and_signs_the_user_out_everywhere(tmp_path):
    """Finding L6: a password change ends every console session; sign-out everywhere on its own."""
    from datetime import timedelta

    from stockade.identity.sessions import resolve_session, start_session
    from stockade.runtime.db import create_engine, session_factory

    url = f"sqlite+aiosqlite:///{tmp_path}/pw.db"
    short = runner.invoke(
        app, ["--db-url", url, "user", "create", "s@example.com", "--password-stdin"], input="short\n"
    )
    assert short.exit_code == 1 and "at least 8 characters" in short.output
    made = runner.invoke(
        app, ["--db-url", url, "user", "create", "u@example.com", "--password-stdin"], input="long enough\n"
    )
    assert made.exit_code == 0, made.output

    async def sessions(action):
        engine = create_engine(url)
        try:
            async with session_factory(engine)() as s:
                return await action(s)
        finally:
            await engine.dispose()

    async def start(s):
        from stockade.identity.directory import find_user

        user = await find_user(s, "u@example.com")
        return [(await start_session(s, user.id, timedelta(hours=1))).token for _ in range(2)]

    async def live(s, tokens):
        return [await resolve_session(s, t) is not None for t in tokens]

    tokens = asyncio.run(sessions(start))
    refused = runner.invoke(app, ["--db-url", url, "user", "set-password", "u@example.com"], input="short\n")
    assert refused.exit_code == 1 and asyncio.run(sessions(lambda s: live(s, tokens))) == [True, True]
    changed = runner.invoke(
        app, ["--db-url", url, "user", "set-password", "u@example.com", "--json"], input="a new password\n"
    )
    assert changed.exit_code == 0 and json.loads(changed.output)["sessions_ended"] == 2, changed.output
    assert asyncio.run(sessions(lambda s: live(s, tokens))) == [False, False]
    tokens = asyncio.run(sessions(start))
    out = runner.invoke(app, ["--db-url", url, "user", "sign-out", "u@example.com", "--json"])
    assert out.exit_code == 0 and json.loads(out.output)["sessions_ended"] == 2, out.output
    assert asyncio.run(sessions(lambda s: live(s, tokens))) == [False, False]
