"""Table models of model-api (written only by model-api). They never leave the service: routes get *Public models."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from stockade.identity.tables import NAMING
from stockade.runtime.db_types import UtcDateTime, new_id, utcnow
from stockade.runtime.outbox import OutboxColumns


class Base(DeclarativeBase):
    """model-api's own metadata (its tables are migrated with their own version table)."""

    metadata = MetaData(naming_convention=NAMING)


class DbConfig(Base):
    __tablename__ = "db_configs"
    __table_args__ = (
        Index(
            "uq_db_configs_one_active",
            "is_active",
            unique=True,
            sqlite_where=text("is_active"),
            postgresql_where=text("is_active"),
        ),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    db_type: Mapped[str] = mapped_column(String(20))
    description: Mapped[str | None] = mapped_column(String(500), default=None)
    is_active: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    activated_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)


class CatalogueModel(Base):
    __tablename__ = "models"
    __table_args__ = (
        UniqueConstraint(
            "db_config_id", "provider", "model_id", name="uq_models_db_config_id_provider_model_id"
        ),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    db_config_id: Mapped[str] = mapped_column(ForeignKey("db_configs.id", ondelete="CASCADE"))
    provider: Mapped[str] = mapped_column(String(64))
    model_id: Mapped[str] = mapped_column(String(200))
    entry_id: Mapped[str] = mapped_column(String(200))
    display_name: Mapped[str] = mapped_column(String(200))
    model_type: Mapped[str] = mapped_column(String(20))
    context_window: Mapped[int | None] = mapped_column(Integer, default=None)
    input_price_micros: Mapped[int | None] = mapped_column(BigInteger, default=None)
    output_price_micros: Mapped[int | None] = mapped_column(BigInteger, default=None)
    capabilities: Mapped[list[Any]] = mapped_column(JSON, default=list)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    updated_by: Mapped[str | None] = mapped_column(String(32), default=None)


class ModelPrice(Base):
    """Effective-dated price history of a catalogue model: one row per price change, kept after later changes.
    The price in force at time t is the row with the latest ``effective_at`` not after t."""

    __tablename__ = "model_prices"
    __table_args__ = (
        Index("ix_model_prices_key_effective_at", "db_config_id", "provider", "model_id", "effective_at"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    db_config_id: Mapped[str] = mapped_column(ForeignKey("db_configs.id", ondelete="CASCADE"))
    provider: Mapped[str] = mapped_column(String(64))
    model_id: Mapped[str] = mapped_column(String(200))
    effective_at: Mapped[datetime] = mapped_column(UtcDateTime())
    input_price_micros: Mapped[int | None] = mapped_column(BigInteger, default=None)
    output_price_micros: Mapped[int | None] = mapped_column(BigInteger, default=None)
    recorded_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    recorded_by: Mapped[str | None] = mapped_column(String(32), default=None)


class OutboxEvent(OutboxColumns, Base):
    """An event written in the same transaction as the change it reports; the relay sends it after the commit.

    Columns from ``stockade.runtime.outbox``.
    """

    __tablename__ = "model_api_outbox"
    __table_args__ = (Index("ix_model_api_outbox_sent_at_created_at", "sent_at", "created_at"),)


class PlatformAudit(Base):
    """Who changed a platform-wide setting (a database configuration, a catalogue entry), written in the same
    transaction as the change (docs/permissions.md). Read by platform administrators only."""

    __tablename__ = "platform_audit"
    __table_args__ = (Index("ix_platform_audit_at", "at"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    actor_id: Mapped[str] = mapped_column(String(32))  # no foreign key: the record outlives the user
    action: Mapped[str] = mapped_column(String(64))
    target: Mapped[str] = mapped_column(String(400))
    details: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
