"""model-api: database configurations and the model catalogue

Revision ID: model_api_0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "model_api_0001"
down_revision = None
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "db_configs",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("db_type", sa.String(20), nullable=False),
        sa.Column("description", sa.String(500), nullable=True),
        sa.Column("is_active", sa.Boolean(), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("activated_at", TS, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_db_configs"),
        sa.UniqueConstraint("name", name="uq_db_configs_name"),
    )
    op.create_index(
        "uq_db_configs_one_active",
        "db_configs",
        ["is_active"],
        unique=True,
        sqlite_where=sa.text("is_active"),
        postgresql_where=sa.text("is_active"),
    )
    op.create_table(
        "models",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("db_config_id", sa.String(32), nullable=False),
        sa.Column("provider", sa.String(64), nullable=False),
        sa.Column("model_id", sa.String(200), nullable=False),
        sa.Column("entry_id", sa.String(200), nullable=False),
        sa.Column("display_name", sa.String(200), nullable=False),
        sa.Column("model_type", sa.String(20), nullable=False),
        sa.Column("context_window", sa.Integer(), nullable=True),
        sa.Column("input_price_micros", sa.BigInteger(), nullable=True),
        sa.Column("output_price_micros", sa.BigInteger(), nullable=True),
        sa.Column("capabilities", sa.JSON(), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.Column("updated_by", sa.String(32), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_models"),
        sa.UniqueConstraint(
            "db_config_id", "provider", "model_id", name="uq_models_db_config_id_provider_model_id"
        ),
        sa.ForeignKeyConstraint(
            ["db_config_id"], ["db_configs.id"], name="fk_models_db_config_id_db_configs", ondelete="CASCADE"
        ),
    )


def downgrade() -> None:
    op.drop_table("models")
    op.drop_table("db_configs")
