"""Alembic migrations: ``python -m stockade.identity.migrate [--url URL]`` runs ``upgrade head``.

The same scripts build the same schema on SQLite and PostgreSQL. ``run_migrations`` is reused by services that
own tables of their own (each with its own version table); on PostgreSQL an advisory lock serialises replicas
that start together.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import text
from sqlalchemy.engine import Connection

from stockade.runtime.db import create_engine, normalise_url
from stockade.runtime.settings import DEFAULT_SQLITE_URL

SCRIPTS = Path(__file__).parent / "migrations"
VERSION_TABLE = "alembic_version_identity"
_LOCK_ID = 7_316_001


def _config(url: str, script_location: Path, version_table: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(script_location))
    cfg.attributes["url"] = normalise_url(url)
    cfg.attributes["version_table"] = version_table
    return cfg


def run_migrations(url: str, script_location: Path, version_table: str, revision: str = "head") -> None:
    """Synchronous ``alembic upgrade``; call it from a thread (``asyncio.to_thread``) inside an event loop."""
    command.upgrade(_config(url, script_location, version_table), revision)


def upgrade(url: str = DEFAULT_SQLITE_URL) -> None:
    """Bring the identity tables at ``url`` to the newest schema (idempotent)."""
    run_migrations(url, SCRIPTS, VERSION_TABLE)


async def upgrade_async(url: str = DEFAULT_SQLITE_URL) -> None:
    await asyncio.to_thread(upgrade, url)


def run_env(context: Any) -> None:
    """Body of every Stockade ``env.py``: online migrations over the async engine."""
    cfg = context.config
    url: str = cfg.attributes["url"]
    version_table: str = cfg.attributes["version_table"]

    def do_run(connection: Connection) -> None:
        context.configure(
            connection=connection,
            target_metadata=None,
            version_table=version_table,
            render_as_batch=connection.dialect.name == "sqlite",
        )
        with context.begin_transaction():
            if connection.dialect.name == "postgresql":
                connection.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": _LOCK_ID})
            context.run_migrations()

    async def run() -> None:
        engine = create_engine(url)
        try:
            async with engine.connect() as conn:
                await conn.run_sync(do_run)
                await conn.commit()
        finally:
            await engine.dispose()

    asyncio.run(run())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m stockade.identity.migrate", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--url", default=DEFAULT_SQLITE_URL, help="database URL (default: the embedded SQLite)"
    )
    args = parser.parse_args(argv)
    upgrade(args.url)
    print("identity schema is up to date", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
