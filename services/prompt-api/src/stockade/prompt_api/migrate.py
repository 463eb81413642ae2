"""prompt-api migrations: ``python -m stockade.prompt_api.migrate [--url URL]`` (identity first, then ours; the runner is
:mod:`stockade.runtime.migrations`)."""

from __future__ import annotations

import sys
from pathlib import Path

from stockade.identity import migrate as identity
from stockade.runtime.migrations import Migrations, Schema

SCHEMA = Schema("prompt-api", Path(__file__).parent / "migrations", "alembic_version_prompt_api")
MIGRATIONS = Migrations("stockade.prompt_api", (identity.SCHEMA, SCHEMA))  # identity first: ours reference it
upgrade, upgrade_async, main = MIGRATIONS.upgrade, MIGRATIONS.upgrade_async, MIGRATIONS.main

if __name__ == "__main__":
    sys.exit(main())
