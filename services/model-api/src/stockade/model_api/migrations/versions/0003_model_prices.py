"""model-api: effective-dated price history of catalogue models (model_prices)

Revision ID: model_api_0003
Revises: model_api_0002
"""

import sqlalchemy as sa
from alembic import op

revision = "model_api_0003"
down_revision = "model_api_0002"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "model_prices",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("db_config_id", sa.String(32), nullable=False),
        sa.Column("provider", sa.String(64), nullable=False),
        sa.Column("model_id", sa.String(200), nullable=False),
        sa.Column("effective_at", TS, nullable=False),
        sa.Column("input_price_micros", sa.BigInteger(), nullable=True),
        sa.Column("output_price_micros", sa.BigInteger(), nullable=True),
        sa.Column("recorded_at", TS, nullable=False),
        sa.Column("recorded_by", sa.String(32), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_model_prices"),
        sa.ForeignKeyConstraint(
            ["db_config_id"],
            ["db_configs.id"],
            name="fk_model_prices_db_config_id_db_configs",
            ondelete="CASCADE",
        ),
    )
    op.create_index(
        "ix_model_prices_key_effective_at",
        "model_prices",
        ["db_config_id", "provider", "model_id", "effective_at"],
    )
    # Each model's current price becomes its first history row, in force since the model was last changed.
    op.execute(
        "INSERT INTO model_prices (id, db_config_id, provider, model_id, effective_at, input_price_micros,"
        " output_price_micros, recorded_at, recorded_by)"
        " SELECT id, db_config_id, provider, model_id, updated_at, input_price_micros, output_price_micros,"
        " updated_at, updated_by FROM models"
    )


def downgrade() -> None:
    op.drop_index("ix_model_prices_key_effective_at", table_name="model_prices")
    op.drop_table("model_prices")
