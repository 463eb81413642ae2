"""The hot read path of GET /prompts/active-prompt-version: one statement, one hash, one comparison, no ORM.

On PostgreSQL a request is one row of one statement on a dedicated asyncpg pool (asyncpg prepares and caches
the statement per connection; concurrent requests share a statement, see ``read_batch``), and the body is
spliced from the stored JSON of ``content`` and ``config``, with no pydantic model per request. On SQLite it runs
the same join through SQLAlchemy.

Permissions are resolved from current rows on every request: the key, its owner's membership of the project's
organisation, the project and the active version are joined in the one statement; nothing is cached, so a
revocation or a removed membership applies to the very next request. Every failure takes the same work
(``read_active`` in ``prompts`` documents the SQLite twin of this rule).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

import asyncpg
from sqlalchemy import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from stockade.identity import keys
from stockade.identity.access import usable
from stockade.prompt_api import prompts
from stockade.prompt_api.read_batch import ReadBatcher
from stockade.runtime.shutdown import finish_within

CLOSE_TIMEOUT_S = 5.0  # the pool's graceful close; then its connections are terminated


@dataclass(frozen=True, slots=True)
class FoundPrompt:
    """A successful read: the JSON body (bytes, ready to send) and its ETag."""

    body: bytes
    etag: str


class ActivePromptReader(Protocol):
    async def read(
        self, api_key: str | None, project_id: str | None, prompt_name: str | None
    ) -> FoundPrompt | None: ...

    async def close(self) -> None: ...


def _json_str(value: str | None) -> bytes:
    return b"null" if value is None else json.dumps(value).encode()


def _timestamp(value: datetime) -> bytes:
    # pydantic's form for an aware UTC datetime, so both read paths and the publish answer agree
    return value.isoformat().replace("+00:00", "Z").encode()


def render_body(project_id: str, prompt_name: str, row: Any) -> bytes:
    """The PromptVersionPublic JSON of a row, spliced from the stored JSON texts (field order as the model)."""
    return b"".join(
        (
            b'{"project_id":',
            _json_str(project_id),
            b',"prompt_name":',
            _json_str(prompt_name),
            b',"version":',
            str(int(row["version"])).encode(),
            b',"content":',
            row["content"].encode(),
            b',"config":',
            b"null" if row["config"] is None else row["config"].encode(),
            b',"sha256":',
            _json_str(row["sha256"]),
            b',"commit_message":',
            _json_str(row["commit_message"]),
            b',"published_at":"',
            _timestamp(row["published_at"]),
            b'","published_by":',
            _json_str(row["published_by"]),
            b"}",
        )
    )


async def _keep_session(_: asyncpg.Connection) -> None:
    return None


class PostgresReader:
    """The read on a dedicated asyncpg pool built from the service's database URL."""

    def __init__(self, pool: asyncpg.Pool, in_flight: int, max_batch: int) -> None:
        self._pool = pool
        self._batcher = ReadBatcher(pool, in_flight, max_batch)

    @classmethod
    async def connect(cls, url: str, in_flight: int, max_batch: int) -> PostgresReader:
        dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
        # min_size=0: nothing connects until the first read (the service starts while PostgreSQL is down).
        # No reset query on release (asyncpg's default costs a round trip per request): these connections run
        # one autocommit SELECT and never change session state; an open transaction is still rolled back.
        pool = await asyncpg.create_pool(dsn, min_size=0, max_size=in_flight, reset=_keep_session)
        return cls(pool, in_flight, max_batch)

    async def read(
        self, api_key: str | None, project_id: str | None, prompt_name: str | None
    ) -> FoundPrompt | None:
        key = keys.presented(api_key)
        args = (key.key_id, project_id or "", prompt_name or "", key.key_hash)
        row = await self._batcher.fetch(args)
        matches = keys.verify_presented(key, row["key_hash"] if row is not None else None)
        if row is None or not matches or row["content"] is None:
            return (
                None  # the statement opened no content: wrong, revoked or expired key, no access, no prompt
            )
        if not usable(row["revoked_at"], row["expires_at"]) or row["member"] is None:
            return None
        return FoundPrompt(
            render_body(project_id or "", prompt_name or "", row), prompts.etag(row["version"], row["sha256"])
        )

    async def close(self) -> None:
        # asyncpg's close waits, unbounded, for every acquired connection to come back: terminate past a bound
        if not await finish_within(
            self._pool.close(), "hot-read pool close", CLOSE_TIMEOUT_S, service="prompt-api"
        ):
            self._pool.terminate()


class SqlAlchemyReader:
    """The read through SQLAlchemy (SQLite, the embedded default)."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    async def read(
        self, api_key: str | None, project_id: str | None, prompt_name: str | None
    ) -> FoundPrompt | None:
        found = await prompts.read_active_once(self.engine, api_key, project_id, prompt_name)
        if found is None:
            return None
        return FoundPrompt(found.model_dump_json().encode(), prompts.etag(found.version, found.sha256))

    async def close(self) -> None:
        await self.engine.dispose()
