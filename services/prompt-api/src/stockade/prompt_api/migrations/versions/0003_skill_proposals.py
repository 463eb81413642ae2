"""prompt-api: skill versions proposed for review on Manual review projects, with their files

Revision ID: prompt_api_0003
Revises: prompt_api_0002
"""

import sqlalchemy as sa
from alembic import op

revision = "prompt_api_0003"
down_revision = "prompt_api_0002"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "skill_proposals",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("project_id", sa.String(32), nullable=False),
        sa.Column("skill_name", sa.String(64), nullable=False),
        sa.Column("skill_md", sa.Text(), nullable=False),
        sa.Column("front_matter", sa.JSON(), nullable=False),
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
        sa.PrimaryKeyConstraint("id", name="pk_skill_proposals"),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name="fk_skill_proposals_project_id_projects",
            ondelete="CASCADE",
        ),
    )
    op.create_index(
        "ix_skill_proposals_project_id_status", "skill_proposals", ["project_id", "status", "proposed_at"]
    )
    op.create_table(
        "skill_proposal_files",
        sa.Column("proposal_id", sa.String(32), nullable=False),
        sa.Column("path", sa.String(512), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("proposal_id", "path", name="pk_skill_proposal_files"),
        sa.ForeignKeyConstraint(
            ["proposal_id"],
            ["skill_proposals.id"],
            name="fk_skill_proposal_files_proposal_id_skill_proposals",
            ondelete="CASCADE",
        ),
    )


def downgrade() -> None:
    op.drop_table("skill_proposal_files")
    op.drop_table("skill_proposals")
