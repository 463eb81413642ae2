"""identity: per-project ingest keys, api_keys.project_id (additive)

Revision ID: identity_0003
Revises: identity_0002
"""

import sqlalchemy as sa
from alembic import op

revision = "identity_0003"
down_revision = "identity_0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("api_keys") as batch:  # SQLite cannot add a foreign key in place
        batch.add_column(sa.Column("project_id", sa.String(32), nullable=True))
        batch.create_foreign_key(
            "fk_api_keys_project_id_projects", "projects", ["project_id"], ["id"], ondelete="CASCADE"
        )


def downgrade() -> None:
    with op.batch_alter_table("api_keys") as batch:
        batch.drop_constraint("fk_api_keys_project_id_projects", type_="foreignkey")
        batch.drop_column("project_id")
