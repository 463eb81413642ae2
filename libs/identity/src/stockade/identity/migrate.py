"""Identity migrations: ``python -m stockade.identity.migrate [--url URL]`` runs ``upgrade head``.

The runner is :mod:`stockade.runtime.migrations`; :data:`SCHEMA` is listed first by every service that owns tables
of its own (they reference users and projects).
"""

from __future__ import annotations

import sys
from pathlib import Path

from stockade.runtime.migrations import Migrations, Schema

SCRIPTS = Path(__file__).parent / "migrations"
VERSION_TABLE = "alembic_version_identity"
SCHEMA = Schema("identity", SCRIPTS, VERSION_TABLE)
MIGRATIONS = Migrations("stockade.identity", (SCHEMA,))
upgrade, upgrade_async, main = MIGRATIONS.upgrade, MIGRATIONS.upgrade_async, MIGRATIONS.main

if __name__ == "__main__":
    sys.exit(main())
