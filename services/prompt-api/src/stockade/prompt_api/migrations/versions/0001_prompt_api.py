"""prompt-api: prompts, skills, immutable versions, skill files, outbox

Revision ID: prompt_api_0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "prompt_api_0001"
down_revision = None
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    for table in ("prompts", "skills"):
        op.create_table(
            table,
            sa.Column("id", sa.String(32), nullable=False),
            sa.Column("project_id", sa.String(32), nullable=False),
            sa.Column("name", sa.String(128 if table == "prompts" else 64), nullable=False),
            sa.Column("latest_version", sa.Integer(), nullable=False),
            sa.Column("active_version", sa.Integer(), nullable=True),
            sa.Column("created_at", TS, nullable=False),
            sa.PrimaryKeyConstraint("id", name=f"pk_{table}"),
            sa.UniqueConstraint("project_id", "name", name=f"uq_{table}_project_id_name"),
            sa.ForeignKeyConstraint(
                ["project_id"], ["projects.id"], name=f"fk_{table}_project_id_projects", ondelete="CASCADE"
            ),
        )
    op.create_table(
        "prompt_versions",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("prompt_id", sa.String(32), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("content", sa.JSON(), nullable=False),
        sa.Column("config", sa.JSON(), nullable=True),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("commit_message", sa.Text(), nullable=True),
        sa.Column("published_by", sa.String(32), nullable=False),
        sa.Column("published_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_prompt_versions"),
        sa.UniqueConstraint("prompt_id", "version", name="uq_prompt_versions_prompt_id_version"),
        sa.ForeignKeyConstraint(
            ["prompt_id"], ["prompts.id"], name="fk_prompt_versions_prompt_id_prompts", ondelete="CASCADE"
        ),
    )
    op.create_table(
        "skill_versions",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("skill_id", sa.String(32), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("skill_md", sa.Text(), nullable=False),
        sa.Column("front_matter", sa.JSON(), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("commit_message", sa.Text(), nullable=True),
        sa.Column("published_by", sa.String(32), nullable=False),
        sa.Column("published_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_skill_versions"),
        sa.UniqueConstraint("skill_id", "version", name="uq_skill_versions_skill_id_version"),
        sa.ForeignKeyConstraint(
            ["skill_id"], ["skills.id"], name="fk_skill_versions_skill_id_skills", ondelete="CASCADE"
        ),
    )
    op.create_table(
        "skill_files",
        sa.Column("skill_version_id", sa.String(32), nullable=False),
        sa.Column("path", sa.String(512), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("skill_version_id", "path", name="pk_skill_files"),
        sa.ForeignKeyConstraint(
            ["skill_version_id"],
            ["skill_versions.id"],
            name="fk_skill_files_skill_version_id_skill_versions",
            ondelete="CASCADE",
        ),
    )
    op.create_table(
        "outbox",
        sa.Column("event_id", sa.String(36), nullable=False),
        sa.Column("subject", sa.String(200), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("headers", sa.JSON(), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("sent_at", TS, nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("event_id", name="pk_outbox"),
    )
    op.create_index("ix_outbox_created_at", "outbox", ["created_at"])


def downgrade() -> None:
    for table in ("outbox", "skill_files", "skill_versions", "prompt_versions", "skills", "prompts"):
        op.drop_table(table)
