"""identity: short-lived console credentials, api_keys.expires_at and api_keys.console_session_id (additive)

Revision ID: identity_0005
Revises: identity_0004
"""

import sqlalchemy as sa
from alembic import op

revision = "identity_0005"
down_revision = "identity_0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("api_keys") as batch:
        batch.add_column(sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("console_session_id", sa.String(32), nullable=True))
        batch.create_index("ix_api_keys_console_session_id", ["console_session_id"])


def downgrade() -> None:
    with op.batch_alter_table("api_keys") as batch:
        batch.drop_index("ix_api_keys_console_session_id")
        batch.drop_column("console_session_id")
        batch.drop_column("expires_at")
