"""model-api: platform_audit, who changed a platform-wide setting (additive)

Revision ID: model_api_0005
Revises: model_api_0004
"""

import sqlalchemy as sa
from alembic import op

revision = "model_api_0005"
down_revision = "model_api_0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "platform_audit",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("actor_id", sa.String(32), nullable=False),
        sa.Column("action", sa.String(64), nullable=False),
        sa.Column("target", sa.String(400), nullable=False),
        sa.Column("details", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_platform_audit"),
    )
    op.create_index("ix_platform_audit_at", "platform_audit", ["at"])


def downgrade() -> None:
    op.drop_table("platform_audit")
