"""model-api: transactional outbox of model.changed.v1 / dbconfig.activated.v1 / apikey.revoked.v1

Revision ID: model_api_0002
Revises: model_api_0001
"""

import sqlalchemy as sa
from alembic import op

revision = "model_api_0002"
down_revision = "model_api_0001"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "model_api_outbox",
        sa.Column("event_id", sa.String(36), nullable=False),
        sa.Column("subject", sa.String(200), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("headers", sa.JSON(), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("sent_at", TS, nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("event_id", name="pk_model_api_outbox"),
    )
    op.create_index("ix_model_api_outbox_sent_at_created_at", "model_api_outbox", ["sent_at", "created_at"])


def downgrade() -> None:
    op.drop_table("model_api_outbox")
