"""postgres_url / postgres_database against a real PostgreSQL."""

from __future__ import annotations

import asyncpg
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from stockade.testing.postgres import to_asyncpg_url


async def test_postgres_url_answers_queries(postgres_url: str) -> None:
    conn = await asyncpg.connect(postgres_url)
    try:
        assert await conn.fetchval("SELECT 40 + 2") == 42
        version = await conn.fetchval("SHOW server_version")
        assert version[0].isdigit()
    finally:
        await conn.close()


async def test_postgres_database_is_fresh_and_usable_with_sqlalchemy(postgres_database: str) -> None:
    assert postgres_database.startswith("postgresql+asyncpg://")
    engine = create_async_engine(postgres_database)
    try:
        async with engine.begin() as conn:
            tables = (
                await conn.execute(
                    text("SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'")
                )
            ).scalar_one()
            assert tables == 0
            await conn.execute(text("CREATE TABLE orders (id int primary key, item text)"))
            await conn.execute(text("INSERT INTO orders VALUES (1, 'tea')"))
        async with engine.connect() as conn:
            assert (await conn.execute(text("SELECT item FROM orders"))).scalar_one() == "tea"
    finally:
        await engine.dispose()


async def test_two_databases_are_isolated(postgres_url: str, postgres_database: str) -> None:
    from stockade.testing.postgres import temporary_database

    with temporary_database(postgres_url) as other:
        assert other != postgres_database
        first = create_async_engine(postgres_database)
        second = create_async_engine(other)
        try:
            async with first.begin() as conn:
                await conn.execute(text("CREATE TABLE only_here (id int)"))
            async with second.connect() as conn:
                found = (
                    await conn.execute(text("SELECT to_regclass('public.only_here') IS NOT NULL"))
                ).scalar_one()
                assert found is False
        finally:
            await first.dispose()
            await second.dispose()


async def test_database_is_dropped_even_with_open_connections(postgres_url: str) -> None:
    from stockade.testing.postgres import temporary_database

    admin = await asyncpg.connect(postgres_url)
    try:
        with temporary_database(postgres_url) as url:
            name = url.rsplit("/", 1)[1]
            assert await admin.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name) == 1
            holder = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://"))
        assert await admin.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name) is None
        with pytest.raises(
            (asyncpg.PostgresError, asyncpg.InterfaceError, asyncpg.InternalClientError, ConnectionError)
        ):
            await holder.fetchval("SELECT 1")
        holder.terminate()
    finally:
        await admin.close()


def test_to_asyncpg_url_keeps_credentials_and_query() -> None:
    url = to_asyncpg_url("postgresql://u:p@db.example:6543/postgres?ssl=require", "orders_1")
    assert url == "postgresql+asyncpg://u:p@db.example:6543/orders_1?ssl=require"
