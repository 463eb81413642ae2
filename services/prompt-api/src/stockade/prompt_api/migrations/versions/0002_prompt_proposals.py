"""prompt-api: proposals awaiting review on Manual review projects

Revision ID: prompt_api_0002
Revises: prompt_api_0001
"""

import sqlalchemy as sa
from alembic import op

revision = "prompt_api_0002"
down_revision = "prompt_api_0001"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "prompt_proposals",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("project_id", sa.String(32), nullable=False),
        sa.Column("prompt_name", sa.String(128), nullable=False),
        sa.Column("content", sa.JSON(), nullable=False),
        sa.Column("config", sa.JSON(), nullable=True),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("commit_message", sa.Text(), nullable=True),
        sa.Column("base_version", sa.Integer(), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("proposed_by", sa.String(32), nullable=False),
        sa.Column("proposed_at", TS, nullable=False),
        sa.Column("decided_by", sa.String(32), nullable=True),
        sa.Column("decided_at", TS, nullable=True),
        sa.Column("comment", sa.Text(), nullable=True),
        sa.Column("version", sa.Integer(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_prompt_proposals"),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name="fk_prompt_proposals_project_id_projects",
            ondelete="CASCADE",
        ),
    )
    op.create_index(
        "ix_prompt_proposals_project_id_status", "prompt_proposals", ["project_id", "status", "proposed_at"]
    )


def downgrade() -> None:
    op.drop_table("prompt_proposals")
