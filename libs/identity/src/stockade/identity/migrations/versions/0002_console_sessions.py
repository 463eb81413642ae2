"""identity: console sessions and sign-in failures (additive)

Revision ID: identity_0002
Revises: identity_0001
"""

import sqlalchemy as sa
from alembic import op

revision = "identity_0002"
down_revision = "identity_0001"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "console_sessions",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("user_id", sa.String(32), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("expires_at", TS, nullable=False),
        sa.Column("last_seen_at", TS, nullable=False),
        sa.Column("revoked_at", TS, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_console_sessions"),
        sa.UniqueConstraint("token_hash", name="uq_console_sessions_token_hash"),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name="fk_console_sessions_user_id_users", ondelete="CASCADE"
        ),
    )
    op.create_index("ix_console_sessions_user_id", "console_sessions", ["user_id"])
    op.create_table(
        "sign_in_failures",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("email", sa.String(320), nullable=False),
        sa.Column("client", sa.String(64), nullable=False),
        sa.Column("failed_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_sign_in_failures"),
    )
    op.create_index("ix_sign_in_failures_email", "sign_in_failures", ["email"])
    op.create_index("ix_sign_in_failures_client", "sign_in_failures", ["client"])


def downgrade() -> None:
    op.drop_table("sign_in_failures")
    op.drop_table("console_sessions")
