from collections.abc import AsyncIterator

import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from stockade.identity.migrate import upgrade_async
from stockade.runtime.db import create_engine, session_factory


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request, tmp_path) -> str:
    """A fresh, empty database of each kind: SQLite in a temp dir and a real PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path}/identity.db"
    return request.getfixturevalue("postgres_database")


@pytest.fixture
async def sessions(db_url) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    await upgrade_async(db_url)
    engine = create_engine(db_url)
    try:
        yield session_factory(engine)
    finally:
        await engine.dispose()
