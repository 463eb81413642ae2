"""Migration model_api_0003 on PostgreSQL: a catalogue written before price history existed gets one history row
per model, its current prices in force since its last change, and later changes add rows."""

import asyncio
from datetime import UTC, datetime

import pytest
from sqlalchemy import text

from stockade.identity import migrate as identity_migrate
from stockade.model_api.catalogue import models as catalogue
from stockade.model_api.catalogue.schemas import ModelIn
from stockade.model_api.migrate import SCHEMA, upgrade_async
from stockade.runtime import migrations
from stockade.runtime.db import create_engine, session_factory

pytestmark = pytest.mark.postgres

CHANGED = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


async def test_existing_prices_become_the_first_history_rows(postgres_database):
    await identity_migrate.upgrade_async(postgres_database)
    await asyncio.to_thread(migrations.run_migrations, postgres_database, SCHEMA, "model_api_0002")
    engine = create_engine(postgres_database)
    try:
        async with engine.begin() as conn:
            await conn.execute(
                text(
                    "INSERT INTO db_configs (id, name, db_type, is_active, created_at)"
                    " VALUES ('cfg1', 'main', 'mongodb', true, :at)"
                ),
                {"at": CHANGED},
            )
            await conn.execute(
                text(
                    "INSERT INTO models (id, db_config_id, provider, model_id, entry_id, display_name, model_type,"
                    " input_price_micros, output_price_micros, capabilities, created_at, updated_at)"
                    " VALUES ('m1', 'cfg1', 'openai', 'gpt-x', 'gpt-x', 'GPT X', 'chat', 2500000, 10000000,"
                    " '[]', :at, :at)"
                ),
                {"at": CHANGED},
            )
        await upgrade_async(postgres_database)
        sessions = session_factory(engine)
        async with sessions() as s:
            history = await catalogue.price_history(s, "cfg1", "openai", "gpt-x")
        assert history == [
            {
                "effectiveAt": CHANGED.isoformat(),
                "inputPricePerMToken": 2.5,
                "outputPricePerMToken": 10,
            }
        ]
        async with sessions() as s:
            same = ModelIn.model_validate(
                {
                    "model_id": "gpt-x",
                    "displayName": "GPT X renamed",
                    "modelType": "chat",
                    "inputPricePerMToken": "2.5",
                    "outputPricePerMToken": "10",
                }
            )
            await catalogue.upsert_model(s, "cfg1", "openai", same)  # no price change: no new row
            dearer = same.model_copy(update={"input_price": same.output_price})
            await catalogue.upsert_model(s, "cfg1", "openai", dearer)
            history = await catalogue.price_history(s, "cfg1", "openai", "gpt-x")
        assert [h["inputPricePerMToken"] for h in history] == [2.5, 10]
    finally:
        await engine.dispose()
