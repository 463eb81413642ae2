"""identity: organisations, users, projects, memberships, tags, api keys

Revision ID: identity_0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "identity_0001"
down_revision = None
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "organisations",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_organisations"),
        sa.UniqueConstraint("name", name="uq_organisations_name"),
    )
    op.create_table(
        "users",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("email", sa.String(320), nullable=False),
        sa.Column("password_hash", sa.String(255), nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_users"),
        sa.UniqueConstraint("email", name="uq_users_email"),
    )
    op.create_table(
        "organisation_members",
        sa.Column("organisation_id", sa.String(32), nullable=False),
        sa.Column("user_id", sa.String(32), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("organisation_id", "user_id", name="pk_organisation_members"),
        sa.ForeignKeyConstraint(
            ["organisation_id"],
            ["organisations.id"],
            name="fk_organisation_members_organisation_id_organisations",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name="fk_organisation_members_user_id_users", ondelete="CASCADE"
        ),
    )
    op.create_table(
        "projects",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("organisation_id", sa.String(32), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("flow", sa.String(20), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_projects"),
        sa.UniqueConstraint("organisation_id", "name", name="uq_projects_organisation_id_name"),
        sa.ForeignKeyConstraint(
            ["organisation_id"],
            ["organisations.id"],
            name="fk_projects_organisation_id_organisations",
            ondelete="CASCADE",
        ),
    )
    op.create_index("ix_projects_organisation_id", "projects", ["organisation_id"])
    op.create_table(
        "project_members",
        sa.Column("project_id", sa.String(32), nullable=False),
        sa.Column("user_id", sa.String(32), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("project_id", "user_id", name="pk_project_members"),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name="fk_project_members_project_id_projects", ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name="fk_project_members_user_id_users", ondelete="CASCADE"
        ),
    )
    op.create_table(
        "project_tags",
        sa.Column("project_id", sa.String(32), nullable=False),
        sa.Column("user_id", sa.String(32), nullable=False),
        sa.Column("tag", sa.String(40), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("project_id", "user_id", "tag", name="pk_project_tags"),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name="fk_project_tags_project_id_projects", ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name="fk_project_tags_user_id_users", ondelete="CASCADE"
        ),
    )
    op.create_table(
        "api_keys",
        sa.Column("id", sa.String(12), nullable=False),
        sa.Column("owner_id", sa.String(32), nullable=False),
        sa.Column("key_hash", sa.String(64), nullable=False),
        sa.Column("scope", sa.String(10), nullable=True),
        sa.Column("deployment", sa.String(10), nullable=False),
        sa.Column("last_four", sa.String(4), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("revoked_at", TS, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_api_keys"),
        sa.UniqueConstraint("key_hash", name="uq_api_keys_key_hash"),
        sa.ForeignKeyConstraint(
            ["owner_id"], ["users.id"], name="fk_api_keys_owner_id_users", ondelete="CASCADE"
        ),
    )
    op.create_index("ix_api_keys_owner_id", "api_keys", ["owner_id"])


def downgrade() -> None:
    for table in (
        "api_keys",
        "project_tags",
        "project_members",
        "projects",
        "organisation_members",
        "users",
        "organisations",
    ):
        op.drop_table(table)
