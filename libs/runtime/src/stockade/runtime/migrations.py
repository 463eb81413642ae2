"""Alembic migrations of every service, with one runner: a :class:`Schema` names a folder of migration scripts
and its own version table; :func:`upgrade` brings a database to the newest version of each schema in order.

The same scripts build the same schema on SQLite and PostgreSQL. On PostgreSQL an advisory lock serialises
replicas that start together. Each ``migrations/env.py`` is two lines: ``run_env(context)``. A service's
``migrate`` module is a :class:`Migrations` value listing its schemas (identity's first: its tables are
referenced), with its command line.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import text
from sqlalchemy.engine import Connection

from stockade.runtime.db import create_engine, normalise_url
from stockade.runtime.settings import DEFAULT_SQLITE_URL

_LOCK_ID = 7_316_001


@dataclass(frozen=True)
class Schema:
    """One package's tables: its migration scripts and the table that records their version."""

    name: str
    scripts: Path
    version_table: str


def _config(url: str, schema: Schema) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(schema.scripts))
    cfg.attributes["url"] = normalise_url(url)
    cfg.attributes["version_table"] = schema.version_table
    return cfg


def run_migrations(url: str, schema: Schema, revision: str = "head") -> None:
    """Synchronous ``alembic upgrade``; call it from a thread (``asyncio.to_thread``) inside an event loop."""
    command.upgrade(_config(url, schema), revision)


def upgrade(url: str, schemas: Sequence[Schema]) -> None:
    """Bring each schema at ``url`` to its newest version, in order (idempotent)."""
    for schema in schemas:
        run_migrations(url, schema)


async def upgrade_async(url: str, schemas: Sequence[Schema]) -> None:
    await asyncio.to_thread(upgrade, url, schemas)


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


@dataclass(frozen=True)
class Migrations:
    """A package's ``migrate`` module: its schemas in order and its command (``python -m <package>.migrate``)."""

    package: str
    schemas: tuple[Schema, ...]

    def upgrade(self, url: str = DEFAULT_SQLITE_URL) -> None:
        upgrade(url, self.schemas)

    async def upgrade_async(self, url: str = DEFAULT_SQLITE_URL) -> None:
        await upgrade_async(url, self.schemas)

    def main(self, argv: list[str] | None = None) -> int:
        """``python -m <package>.migrate [--url URL | --url-env NAME]``: upgrade the schemas and say which are up
        to date. ``--url-env`` reads the URL (which holds the database password) from an environment variable, so
        it never appears in a process list (``ps``, ``/proc/<pid>/cmdline``)."""
        names = " and ".join(schema.name for schema in self.schemas)
        parser = argparse.ArgumentParser(
            prog=f"python -m {self.package}.migrate", description=f"Bring the {names} schemas up to date."
        )
        source = parser.add_mutually_exclusive_group()
        source.add_argument("--url", help="database URL (default: the embedded SQLite)")
        source.add_argument("--url-env", metavar="NAME", help="read the database URL from this variable")
        args = parser.parse_args(argv)
        url = args.url or DEFAULT_SQLITE_URL
        if args.url_env:
            url = os.environ.get(args.url_env, "")
            if not url:
                parser.error(f"the environment variable {args.url_env} is not set")
        self.upgrade(url)
        print(
            f"{names} {'schema is' if len(self.schemas) == 1 else 'schemas are'} up to date", file=sys.stderr
        )
        return 0
