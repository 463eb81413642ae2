"""prompt-api: guardrail policies, their immutable versions and proposals (issue 31)

Revision ID: prompt_api_0004
Revises: prompt_api_0003
"""

import sqlalchemy as sa
from alembic import op

revision = "prompt_api_0004"
down_revision = "prompt_api_0003"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "policies",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("project_id", sa.String(32), nullable=False),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("latest_version", sa.Integer(), nullable=False),
        sa.Column("active_version", sa.Integer(), nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_policies"),
        sa.UniqueConstraint("project_id", "name", name="uq_policies_project_id_name"),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name="fk_policies_project_id_projects", ondelete="CASCADE"
        ),
    )
    op.create_table(
        "policy_versions",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("policy_id", sa.String(32), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("yaml", sa.Text(), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("commit_message", sa.Text(), nullable=True),
        sa.Column("published_by", sa.String(32), nullable=False),
        sa.Column("published_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_policy_versions"),
        sa.UniqueConstraint("policy_id", "version", name="uq_policy_versions_policy_id_version"),
        sa.ForeignKeyConstraint(
            ["policy_id"], ["policies.id"], name="fk_policy_versions_policy_id_policies", ondelete="CASCADE"
        ),
    )
    op.create_table(
        "policy_proposals",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("project_id", sa.String(32), nullable=False),
        sa.Column("policy_name", sa.String(128), nullable=False),
        sa.Column("yaml", sa.Text(), nullable=False),
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
        sa.PrimaryKeyConstraint("id", name="pk_policy_proposals"),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name="fk_policy_proposals_project_id_projects",
            ondelete="CASCADE",
        ),
    )
    op.create_index(
        "ix_policy_proposals_project_id_status", "policy_proposals", ["project_id", "status", "proposed_at"]
    )


def downgrade() -> None:
    op.drop_table("policy_proposals")
    op.drop_table("policy_versions")
    op.drop_table("policies")
