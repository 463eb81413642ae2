"""Async database engine factory: SQLite (aiosqlite) by default, PostgreSQL through asyncpg."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

from stockade.runtime.settings import DatabaseSettings


def normalise_url(url: str) -> str:
    """Give plain ``postgresql://`` and ``sqlite://`` URLs their async driver."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise ValueError(f"not a database URL: {url!r}")
    if scheme in {"postgresql", "postgres", "postgresql+psycopg2", "postgresql+psycopg"}:
        scheme = "postgresql+asyncpg"
    elif scheme == "sqlite":
        scheme = "sqlite+aiosqlite"
    return f"{scheme}://{rest}"


def is_sqlite(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def create_engine(settings: DatabaseSettings | str) -> AsyncEngine:
    """Build the service's one engine. Connects lazily: nothing happens until first use."""
    cfg = DatabaseSettings(url=settings) if isinstance(settings, str) else settings
    url = normalise_url(cfg.url)
    kwargs: dict[str, Any] = {"echo": cfg.echo}
    if is_sqlite(url):
        database = make_url(url).database
        if database and database != ":memory:":
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        kwargs["connect_args"] = {"timeout": 30}
    else:
        kwargs.update(pool_size=cfg.pool_size, max_overflow=cfg.max_overflow, pool_pre_ping=cfg.pool_pre_ping)
    engine = create_async_engine(url, **kwargs)
    if is_sqlite(url):
        _sqlite_pragmas(engine)
    return engine


def _sqlite_pragmas(engine: AsyncEngine) -> None:
    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()


def session_factory(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)
