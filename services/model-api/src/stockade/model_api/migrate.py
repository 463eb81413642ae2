"""model-api migrations: ``python -m stockade.model_api.migrate [--url URL]`` (identity first, then ours)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from stockade.identity import migrate as identity_migrate
from stockade.runtime.settings import DEFAULT_SQLITE_URL

SCRIPTS = Path(__file__).parent / "migrations"
VERSION_TABLE = "alembic_version_model_api"


def upgrade(url: str = DEFAULT_SQLITE_URL) -> None:
    """Identity tables (which ours reference), then model-api's own; idempotent."""
    identity_migrate.upgrade(url)
    identity_migrate.run_migrations(url, SCRIPTS, VERSION_TABLE)


async def upgrade_async(url: str = DEFAULT_SQLITE_URL) -> None:
    await asyncio.to_thread(upgrade, url)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m stockade.model_api.migrate")
    parser.add_argument(
        "--url", default=DEFAULT_SQLITE_URL, help="database URL (default: the embedded SQLite)"
    )
    upgrade(parser.parse_args(argv).url)
    print("identity and model-api schemas are up to date", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
