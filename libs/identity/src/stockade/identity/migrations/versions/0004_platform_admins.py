"""identity: the platform administrator role (additive)

Revision ID: identity_0004
Revises: identity_0003
"""

import sqlalchemy as sa
from alembic import op

revision = "identity_0004"
down_revision = "identity_0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "platform_admins",
        sa.Column("user_id", sa.String(32), nullable=False),
        sa.Column("granted_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("user_id", name="pk_platform_admins"),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name="fk_platform_admins_user_id_users", ondelete="CASCADE"
        ),
    )


def downgrade() -> None:
    op.drop_table("platform_admins")
