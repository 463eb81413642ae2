"""model-api: an active database configuration from the start (reads no longer create one)

Revision ID: model_api_0004
Revises: model_api_0003

An empty ``db_configs`` gets the ``default`` configuration (``clickhouse``), active. Configurations without an
active one (only after manual edits) get their oldest activated. Before this, the first read did both.
"""

import uuid
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision = "model_api_0004"
down_revision = "model_api_0003"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)

db_configs = sa.table(
    "db_configs",
    sa.column("id", sa.String(32)),
    sa.column("name", sa.String(100)),
    sa.column("db_type", sa.String(20)),
    sa.column("description", sa.String(500)),
    sa.column("is_active", sa.Boolean()),
    sa.column("created_at", TS),
    sa.column("activated_at", TS),
)


def upgrade() -> None:
    conn = op.get_bind()
    now = datetime.now(UTC)
    if conn.execute(sa.select(db_configs.c.id).limit(1)).first() is None:
        op.bulk_insert(
            db_configs,
            [
                {
                    "id": uuid.uuid4().hex,
                    "name": "default",
                    "db_type": "clickhouse",
                    "description": "Created by the migrations",
                    "is_active": True,
                    "created_at": now,
                    "activated_at": now,
                }
            ],
        )
        return
    if conn.execute(sa.select(db_configs.c.id).where(db_configs.c.is_active)).first() is None:
        oldest = conn.execute(
            sa.select(db_configs.c.id).order_by(db_configs.c.created_at, db_configs.c.id).limit(1)
        ).scalar_one()
        conn.execute(
            sa.update(db_configs).where(db_configs.c.id == oldest).values(is_active=True, activated_at=now)
        )


def downgrade() -> None:
    """Data only: the configurations stay."""
