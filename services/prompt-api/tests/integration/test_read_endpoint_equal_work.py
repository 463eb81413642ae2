"""The uniform 404 takes the same work as a hit: one SQL statement, one hash, one constant-time comparison.

(Counted, not timed: timing assertions are flaky on shared machines; equal work is what makes timing equal.)
"""

from datetime import timedelta

import asyncpg
from sqlalchemy import event

from stockade import identity
from stockade.identity import keys
from stockade.identity.session_keys import CREDENTIAL_TTL
from stockade.prompt_api import prompts
from stockade.prompt_api.read_batch import READ_ACTIVE_BATCH_SQL
from stockade.prompt_api.read_path import SqlAlchemyReader
from stockade.runtime.db_types import utcnow

PATH = "/prompts/active-prompt-version"


async def test_every_path_does_the_same_work(client, world, sessions, monkeypatch, console_credential):
    r = await client.post(
        PATH,
        headers={"X-API-Key": world.write_key},
        json={"project_id": world.direct.id, "prompt_name": "p", "content": "c"},
    )
    assert r.status_code == 201
    async with sessions() as s:
        revoked = await identity.create_api_key(s, world.alice.id, scope="read")
        await identity.revoke_api_key(s, revoked.id)
        await s.commit()
    _, expired = await console_credential(
        world.alice.id, now=utcnow() - CREDENTIAL_TTL - timedelta(seconds=1)
    )
    counts = {"sql": 0, "hash": 0, "compare": 0}

    def on_sql(*_):
        counts["sql"] += 1

    reader = client.app.state.service.own.reader
    if isinstance(reader, SqlAlchemyReader):
        engine = reader.engine.sync_engine
        event.listen(engine, "before_cursor_execute", on_sql)
    else:  # PostgreSQL: the asyncpg pool; every way a connection can run a statement is counted
        engine = None
        for name in ("execute", "executemany", "fetch", "fetchrow", "fetchval", "prepare"):
            real = getattr(asyncpg.connection.Connection, name)

            def counted(self, *args, _real=real, **kwargs):
                on_sql()
                return _real(self, *args, **kwargs)

            monkeypatch.setattr(asyncpg.connection.Connection, name, counted)
    real_hash, real_match = keys.hash_key, keys.hashes_match

    def hash_key(text):
        counts["hash"] += 1
        return real_hash(text)

    def hashes_match(a, b):
        counts["compare"] += 1
        return real_match(a, b)

    monkeypatch.setattr(keys, "hash_key", hash_key)
    monkeypatch.setattr(keys, "hashes_match", hashes_match)
    good = {"api_key": world.write_key, "project_id": world.direct.id, "prompt_name": "p"}
    cases = {
        "hit": good,
        "malformed key": {**good, "api_key": "junk"},
        "unknown key": {**good, "api_key": keys.generate_key().plaintext},
        "revoked key": {**good, "api_key": revoked.key},
        "expired key": {**good, "api_key": expired},
        "unknown project": {**good, "project_id": "nope"},
        "unknown prompt": {**good, "prompt_name": "nope"},
        "other organisation": {**good, "project_id": world.foreign.id},
        "no key": {k: v for k, v in good.items() if k != "api_key"},
    }
    seen = {}
    try:
        for label, params in cases.items():
            for k in counts:
                counts[k] = 0
            r = await client.get(PATH, params=params)
            assert r.status_code == (200 if label == "hit" else 404), label
            seen[label] = dict(counts)
    finally:
        if engine is not None:
            event.remove(engine, "before_cursor_execute", on_sql)
    assert all(c == {"sql": 1, "hash": 1, "compare": 1} for c in seen.values()), seen


async def test_the_statement_opens_content_only_for_a_hit(
    client, world, sessions, db_url, console_credential
):
    """Finding L4: every cause of the 404 gets one row from the statement, and none of them reads the content
    (its size cannot show in the time of a refusal). Asked of the statement itself, on each database kind."""
    big = "x" * 50_000
    r = await client.post(
        PATH,
        headers={"X-API-Key": world.write_key},
        json={"project_id": world.direct.id, "prompt_name": "p", "content": big},
    )
    assert r.status_code == 201
    async with sessions() as s:
        revoked = await identity.create_api_key(s, world.alice.id, scope="read")
        await identity.revoke_api_key(s, revoked.id)
        await s.commit()
    _, expired = await console_credential(
        world.alice.id, now=utcnow() - CREDENTIAL_TTL - timedelta(seconds=1)
    )
    good = (world.write_key, world.direct.id, "p")
    cases = {
        "hit": good,
        "unknown key": (keys.generate_key().plaintext, world.direct.id, "p"),
        "revoked key": (revoked.key, world.direct.id, "p"),
        "expired key": (expired, world.direct.id, "p"),
        "not an organisation member": (world.carol_key, world.foreign.id, "p"),
        "unknown project": (world.write_key, "nope", "p"),
        "unknown prompt": (world.write_key, world.direct.id, "nope"),
        "other organisation": (world.write_key, world.foreign.id, "p"),
    }
    reader = client.app.state.service.own.reader
    opened = {}
    for label, (key, project_id, name) in cases.items():
        key_id = keys.key_id_of(key) or keys.PLACEHOLDER_ID
        if isinstance(reader, SqlAlchemyReader):
            async with reader.engine.connect() as conn:
                params = {
                    "key_id": key_id,
                    "project_id": project_id,
                    "prompt_name": name,
                    "key_hash": keys.hash_key(key),
                    "now": utcnow(),
                }
                rows = (await conn.execute(prompts._READ_ACTIVE, params)).all()
            opened[label] = (len(rows), rows[0].content is not None)
        else:
            conn = await asyncpg.connect(db_url.replace("postgresql+asyncpg", "postgresql"))
            try:
                rows = await conn.fetch(
                    READ_ACTIVE_BATCH_SQL, [key_id], [project_id], [name], [keys.hash_key(key)], utcnow()
                )
            finally:
                await conn.close()
            opened[label] = (len(rows), rows[0]["content"] is not None)
    assert opened == {label: (1, label == "hit") for label in cases}, opened
