"""The migrations build the table models' schema on both databases; no table ever holds a key in plaintext."""

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect, text

from stockade.prompt_api.migrate import SCHEMA
from stockade.prompt_api.tables import Base


def _ours(name, type_, parent_names):
    return type_ != "table" or name in Base.metadata.tables


async def test_migrated_schema_matches_the_models(sessions):
    async with sessions() as s:
        conn = await s.connection()

        def run(sync_conn):
            ctx = MigrationContext.configure(sync_conn, opts={"compare_type": True, "include_name": _ours})
            return compare_metadata(ctx, Base.metadata), set(inspect(sync_conn).get_table_names())

        diff, tables = await conn.run_sync(run)
    # the migration adds foreign keys to the identity tables that the ORM models leave out on purpose
    diff = [d for d in diff if not (isinstance(d, tuple) and d[0] in {"add_fk", "remove_fk"})]
    assert diff == []
    assert set(Base.metadata.tables) | {SCHEMA.version_table, "api_keys", "projects"} <= tables


async def test_no_table_holds_a_key_in_plaintext(client, world, sessions, sample_skill):
    body, _, _ = sample_skill
    h = {"X-API-Key": world.write_key}
    assert (
        await client.post(
            "/prompts/active-prompt-version",
            headers=h,
            json={"project_id": world.direct.id, "prompt_name": "p", "content": "c"},
        )
    ).status_code == 201
    assert (
        await client.post("/skills/active-version", headers=h, json=body(world.direct.id))
    ).status_code == 201
    await client.get(
        "/prompts/active-prompt-version",
        params={"api_key": world.read_key, "project_id": world.direct.id, "prompt_name": "p"},
    )
    async with sessions() as s:
        conn = await s.connection()
        names = await conn.run_sync(lambda c: inspect(c).get_table_names())
        dump = ""
        for name in names:
            dump += repr((await s.execute(text(f'SELECT * FROM "{name}"'))).all())
    for key in (world.write_key, world.read_key, world.legacy_key, world.hosted_key, world.carol_key):
        assert key not in dump and key[16:48] not in dump
