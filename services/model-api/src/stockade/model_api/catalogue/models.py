"""The model catalogue of one database configuration: list grouped by provider, create-or-update, delete.

The functions take the caller's session and never commit: the caller (``actions``) owns the transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from stockade.model_api.catalogue.prices import from_micros, price_json, to_micros
from stockade.model_api.catalogue.schemas import ModelIn, ModelPublic
from stockade.model_api.errors import ModelNotFound
from stockade.model_api.tables import CatalogueModel, ModelPrice
from stockade.runtime.db_types import utcnow
from stockade.runtime.storable import is_storable

Change = Literal["created", "updated", "deleted"]


@dataclass(frozen=True, slots=True)
class ProviderGroup:
    provider: str
    models: list[ModelPublic]


@dataclass(frozen=True, slots=True)
class Upserted:
    model: ModelPublic
    change: Change


def _public(row: CatalogueModel) -> ModelPublic:
    return ModelPublic(
        db_config_id=row.db_config_id,
        provider=row.provider,
        entry_id=row.entry_id,
        model_id=row.model_id,
        display_name=row.display_name,
        model_type=row.model_type,
        context_window=row.context_window,
        input_price=from_micros(row.input_price_micros),
        output_price=from_micros(row.output_price_micros),
        capabilities=list(row.capabilities or []),
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


async def list_models(
    session: AsyncSession, db_config_id: str, provider: str | None = None
) -> list[ProviderGroup]:
    """Entries of the configuration grouped by provider (sorted), models by display name then model_id."""
    query = select(CatalogueModel).where(CatalogueModel.db_config_id == db_config_id)
    if provider is not None:
        query = query.where(CatalogueModel.provider == provider)
    rows = (
        await session.execute(
            query.order_by(CatalogueModel.provider, CatalogueModel.display_name, CatalogueModel.model_id)
        )
    ).scalars()
    groups: dict[str, list[ModelPublic]] = {}
    for row in rows:
        groups.setdefault(row.provider, []).append(_public(row))
    return [ProviderGroup(name, models) for name, models in groups.items()]


async def get_model(session: AsyncSession, db_config_id: str, provider: str, model_id: str) -> ModelPublic:
    row = await _find(session, db_config_id, provider, model_id)
    if row is None:
        raise ModelNotFound(f"no model {model_id!r} of provider {provider!r} in this database configuration")
    return _public(row)


async def price_history(
    session: AsyncSession, db_config_id: str, provider: str, model_id: str
) -> list[dict[str, object]]:
    """The model's prices, oldest first: ``{"effectiveAt", "inputPricePerMToken", "outputPricePerMToken"}``."""
    if not (is_storable(provider) and is_storable(model_id)):
        return []
    query = (
        select(ModelPrice)
        .where(
            ModelPrice.db_config_id == db_config_id,
            ModelPrice.provider == provider,
            ModelPrice.model_id == model_id,
        )
        .order_by(ModelPrice.effective_at, ModelPrice.recorded_at)
    )
    return [
        {
            "effectiveAt": row.effective_at.isoformat(),
            "inputPricePerMToken": price_json(from_micros(row.input_price_micros)),
            "outputPricePerMToken": price_json(from_micros(row.output_price_micros)),
        }
        for row in (await session.execute(query)).scalars()
    ]


async def _find(
    session: AsyncSession, db_config_id: str, provider: str, model_id: str, *, lock: bool = False
) -> CatalogueModel | None:
    if not (is_storable(provider) and is_storable(model_id)):
        return None  # no row holds a NUL (PostgreSQL cannot even compare one)
    query = select(CatalogueModel).where(
        CatalogueModel.db_config_id == db_config_id,
        CatalogueModel.provider == provider,
        CatalogueModel.model_id == model_id,
    )
    if lock:
        query = query.with_for_update()
    return (await session.execute(query)).scalar_one_or_none()


def _apply(row: CatalogueModel, model: ModelIn) -> None:
    row.entry_id = model.id or model.model_id
    row.display_name = model.display_name
    row.model_type = model.model_type.value
    row.context_window = model.context_window
    row.input_price_micros = to_micros(model.input_price)
    row.output_price_micros = to_micros(model.output_price)
    row.capabilities = [c.value for c in model.capabilities]


async def upsert_model(
    session: AsyncSession,
    db_config_id: str,
    provider: str,
    model: ModelIn,
    *,
    actor: str | None = None,
    effective_at: datetime | None = None,
) -> Upserted:
    """Create the entry keyed by (configuration, provider, model_id), or replace every field of it.

    A new entry or a changed price adds a row to the price history, in force from ``effective_at`` (default:
    now). Two transactions creating the same key at once: one fails with ``IntegrityError`` at the flush or the
    commit, and its caller retries the whole transaction (it then finds the row and updates it).
    """
    row = await _find(session, db_config_id, provider, model.model_id, lock=True)
    now = utcnow()
    change: Change = "updated"
    if row is None:
        change = "created"
        row = CatalogueModel(
            db_config_id=db_config_id, provider=provider, model_id=model.model_id, created_at=now
        )
        session.add(row)
    before = (row.input_price_micros, row.output_price_micros)
    _apply(row, model)
    if change == "created" or before != (row.input_price_micros, row.output_price_micros):
        session.add(
            ModelPrice(
                db_config_id=db_config_id,
                provider=provider,
                model_id=model.model_id,
                effective_at=effective_at or now,
                input_price_micros=row.input_price_micros,
                output_price_micros=row.output_price_micros,
                recorded_at=now,
                recorded_by=actor,
            )
        )
    row.updated_at = now
    row.updated_by = actor
    await session.flush()
    return Upserted(_public(row), change)


async def delete_model(session: AsyncSession, db_config_id: str, provider: str, model_id: str) -> ModelPublic:
    row = await _find(session, db_config_id, provider, model_id, lock=True)
    if row is None:
        raise ModelNotFound(f"no model {model_id!r} of provider {provider!r} in this database configuration")
    gone = _public(row)
    await session.delete(row)
    await session.flush()
    return gone
