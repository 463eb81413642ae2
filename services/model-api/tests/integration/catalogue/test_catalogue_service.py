"""Service functions against real PostgreSQL (and SQLite for the schema): catalogue keyed by the active configuration.

The domain functions (``catalogue``, ``dbconfigs``) never commit; ``actions`` runs each change as one transaction.
"""

import asyncio
from decimal import Decimal

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import func, select, update

from stockade.model_api.catalogue import actions, dbconfigs
from stockade.model_api.catalogue import models as catalogue
from stockade.model_api.catalogue.schemas import DbConfigCreate, ModelIn
from stockade.model_api.errors import ConfigConflict, ModelNotFound, NoActiveConfig
from stockade.model_api.migrate import upgrade_async
from stockade.model_api.tables import Base, DbConfig
from stockade.runtime.db import create_engine, session_factory


def model(model_id="gpt-4o", **fields):
    data = {
        "model_id": model_id,
        "displayName": fields.pop("displayName", model_id.upper()),
        "modelType": "chat",
    }
    return ModelIn.model_validate({**data, **fields})


@pytest.fixture
async def sessions(postgres_database):
    await upgrade_async(postgres_database)
    engine = create_engine(postgres_database)
    yield session_factory(engine)
    await engine.dispose()


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def test_migrations_build_the_table_models(kind, tmp_path, request):
    url = (
        f"sqlite+aiosqlite:///{tmp_path}/m.db"
        if kind == "sqlite"
        else request.getfixturevalue("postgres_database")
    )
    await upgrade_async(url)
    await upgrade_async(url)  # idempotent
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:

            def diff(sync_conn):
                ctx = MigrationContext.configure(
                    sync_conn,
                    opts={
                        "compare_type": True,
                        "include_name": lambda n, t, _: t != "table" or n in Base.metadata.tables,
                    },
                )
                return compare_metadata(ctx, Base.metadata)

            assert await conn.run_sync(diff) == []
    finally:
        await engine.dispose()


async def test_create_update_replace_and_delete(sessions):
    async with sessions() as s:
        config = await dbconfigs.active_config(s)
        assert config.name == "default" and config.is_active
        first = await catalogue.upsert_model(
            s,
            config.id,
            "openai",
            model(inputPricePerMToken="2.5", capabilities=["text", "tools"], contextWindow=128000),
        )
        assert first.change == "created" and first.model.input_price == Decimal("2.5")
        again = await catalogue.upsert_model(s, config.id, "openai", model(displayName="GPT-4o (new)"))
        assert again.change == "updated"
        stored = await catalogue.get_model(s, config.id, "openai", "gpt-4o")
        # an update replaces the record: fields left out are gone, not kept from before
        assert (
            stored.display_name == "GPT-4o (new)" and stored.capabilities == [] and stored.input_price is None
        )
        assert stored.created_at == first.model.created_at and stored.updated_at > first.model.updated_at
        await catalogue.upsert_model(s, config.id, "anthropic", model("claude-sonnet", displayName="Claude"))
        await catalogue.upsert_model(s, config.id, "openai", model("gpt-4o-mini", displayName="A mini"))
        groups = await catalogue.list_models(s, config.id)
        assert [(g.provider, [m.model_id for m in g.models]) for g in groups] == [
            ("anthropic", ["claude-sonnet"]),
            ("openai", ["gpt-4o-mini", "gpt-4o"]),
        ]
        assert [g.provider for g in await catalogue.list_models(s, config.id, "anthropic")] == ["anthropic"]
        gone = await catalogue.delete_model(s, config.id, "openai", "gpt-4o")
        assert gone.model_id == "gpt-4o"
        with pytest.raises(ModelNotFound):
            await catalogue.delete_model(s, config.id, "openai", "gpt-4o")


async def test_the_catalogue_follows_the_active_configuration(sessions):
    async with sessions() as s:
        default = await dbconfigs.active_config(s)
        await s.commit()
        await actions.save_model(s, None, "openai", model(), actor="u1")
        staging = await actions.create_config(
            s, None, DbConfigCreate(name="staging", db_type="mongodb"), actor="u1"
        )
        assert not staging.is_active
        with pytest.raises(ConfigConflict):
            await actions.create_config(
                s, None, DbConfigCreate(name="staging", db_type="dynamodb"), actor="u1"
            )
        await actions.activate(s, None, staging.id, actor="u1")
        active = await dbconfigs.active_config(s)
        await s.commit()
        assert active.id == staging.id
        assert await catalogue.list_models(s, active.id) == []
        await s.commit()
        # the same key may exist in both configurations independently
        await actions.save_model(s, None, "openai", model(displayName="Staging GPT"), actor="u1")
        await actions.activate(s, None, default.id, actor="u1")
        back = await catalogue.list_models(s, (await dbconfigs.active_config(s)).id)
        assert [m.display_name for g in back for m in g.models] == ["GPT-4O"]
        assert [c.name for c in await dbconfigs.list_configs(s) if c.is_active] == ["default"]


async def test_concurrent_writers_keep_one_row_and_one_active_configuration(sessions):
    async with sessions() as s:
        config = await dbconfigs.active_config(s)
        await s.commit()
        others = [
            await actions.create_config(
                s, None, DbConfigCreate(name=f"c{i}", db_type="clickhouse"), actor="u1"
            )
            for i in range(4)
        ]

    async def upsert(i):
        async with sessions() as s:
            _, saved = await actions.save_model(
                s, None, "openai", model(displayName=f"writer {i}"), actor="u"
            )
            return saved

    results = await asyncio.gather(*(upsert(i) for i in range(6)))
    assert sorted(r.change for r in results) == ["created"] + ["updated"] * 5
    async with sessions() as s:
        groups = await catalogue.list_models(s, config.id)
        assert sum(len(g.models) for g in groups) == 1

    async def activate(config_id):
        async with sessions() as s:
            return await actions.activate(s, None, config_id, actor="u1")

    await asyncio.gather(*(activate(c.id) for c in others))
    async with sessions() as s:
        assert len([c for c in await dbconfigs.list_configs(s) if c.is_active]) == 1


async def _config_count(sessions) -> int:
    async with sessions() as s:
        return (await s.execute(select(func.count()).select_from(DbConfig))).scalar_one()


async def test_the_migrations_make_a_default_active_and_reads_never_write(sessions):
    async with sessions() as s:
        configs = await dbconfigs.list_configs(s)
    assert [(c.name, c.db_type.value, c.is_active) for c in configs] == [("default", "clickhouse", True)]
    async with sessions() as s, s.begin():
        await s.execute(update(DbConfig).values(is_active=False))  # a manual edit: nothing active
    async with sessions() as s:
        with pytest.raises(NoActiveConfig):
            await dbconfigs.active_config(s)
        assert [c.is_active for c in await dbconfigs.list_configs(s)] == [False]
        assert not s.new and not s.dirty
    assert await _config_count(sessions) == 1


async def test_a_failed_action_leaves_nothing_behind(sessions):
    async with sessions() as s:
        await actions.create_config(s, None, DbConfigCreate(name="taken", db_type="mongodb"), actor="u1")
        with pytest.raises(ConfigConflict):
            await actions.create_config(
                s, None, DbConfigCreate(name="taken", db_type="dynamodb", activate=True), actor="u1"
            )
        with pytest.raises(ModelNotFound):
            await actions.remove_model(s, None, "openai", "never-saved", actor="u1")
        # the session is usable again after each rollback, and nothing of the failed actions was kept
        active = await dbconfigs.active_config(s)
    assert active.name == "default"
    assert await _config_count(sessions) == 2
