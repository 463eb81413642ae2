"""The Alembic scripts build exactly the table models' schema, on SQLite and on PostgreSQL."""

import os
import subprocess
import sys

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect

from stockade.identity.migrate import VERSION_TABLE, upgrade_async
from stockade.identity.tables import Base
from stockade.runtime.db import create_engine


def _ours(name, type_, parent_names):
    return type_ != "table" or name in Base.metadata.tables


async def _diff(url):
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:

            def run(sync_conn):
                ctx = MigrationContext.configure(
                    sync_conn, opts={"compare_type": True, "include_name": _ours}
                )
                diff = compare_metadata(ctx, Base.metadata)
                tables = set(inspect(sync_conn).get_table_names())
                return diff, tables

            return await conn.run_sync(run)
    finally:
        await engine.dispose()


async def test_migrations_match_the_table_models(db_url):
    await upgrade_async(db_url)
    await upgrade_async(db_url)  # idempotent
    diff, tables = await _diff(db_url)
    assert set(Base.metadata.tables) <= tables
    assert VERSION_TABLE in tables
    assert diff == []


def test_migrate_module_runs_from_the_command_line(tmp_path):
    url = f"sqlite:///{tmp_path}/cli.db"
    out = subprocess.run(
        [sys.executable, "-m", "stockade.identity.migrate", "--url", url],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ},
    )
    assert out.returncode == 0, out.stderr
    import sqlite3

    names = {r[0] for r in sqlite3.connect(tmp_path / "cli.db").execute("select name from sqlite_master")}
    assert {"api_keys", "projects", "project_tags", VERSION_TABLE} <= names
