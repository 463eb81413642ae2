"""The hot read path of GET /prompts/active-prompt-version: one statement, one hash, one comparison, no ORM.

On PostgreSQL it runs one statement on a dedicated asyncpg pool (asyncpg prepares and caches it per connection,
so a request is one Bind/Execute round trip) and splices the stored JSON of ``content`` and ``config`` into a
body built from bytes, with no pydantic model per request. On SQLite it runs the same join through SQLAlchemy.

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
from stockade.prompt_api import prompts

_DUMMY_HASH = "0" * 64

# The same join as prompts._READ_ACTIVE, written once in PostgreSQL's dialect: $1 key id, $2 project, $3 prompt.
READ_ACTIVE_SQL = """
SELECT v.version, v.content::text AS content, v.config::text AS config, v.sha256, v.commit_message,
       v.published_at, v.published_by, k.key_hash, k.revoked_at, m.user_id AS member
FROM projects AS p
JOIN prompts AS pr ON pr.project_id = p.id AND pr.name = $3
JOIN prompt_versions AS v ON v.prompt_id = pr.id AND v.version = pr.active_version
LEFT OUTER JOIN api_keys AS k ON k.id = $1
LEFT OUTER JOIN organisation_members AS m ON m.organisation_id = p.organisation_id AND m.user_id = k.owner_id
WHERE p.id = $2
"""


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

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    @classmethod
    async def connect(cls, url: str, size: int) -> PostgresReader:
        dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
        # No reset query on release (asyncpg's default costs a round trip per request): these connections run
        # one autocommit SELECT and never change session state; an open transaction is still rolled back.
        pool = await asyncpg.create_pool(dsn, min_size=1, max_size=size, reset=_keep_session)
        return cls(pool)

    async def read(
        self, api_key: str | None, project_id: str | None, prompt_name: str | None
    ) -> FoundPrompt | None:
        key_id = keys.key_id_of(api_key) or keys.PLACEHOLDER_ID
        computed = keys.hash_key(api_key or "")
        args = (key_id, project_id or "", prompt_name or "")
        row = await self._fetch(args)
        stored = row["key_hash"] if row is not None and row["key_hash"] is not None else _DUMMY_HASH
        matches = keys.hashes_match(stored, computed)
        if row is None or not matches or row["revoked_at"] is not None or row["member"] is None:
            return None
        return FoundPrompt(
            render_body(project_id or "", prompt_name or "", row), prompts.etag(row["version"], row["sha256"])
        )

    async def _fetch(self, args: tuple[str, str, str]) -> asyncpg.Record | None:
        """One statement; a connection the server dropped is retried once on a fresh one."""
        for attempt in (1, 2):
            try:
                async with self._pool.acquire() as conn:
                    row: asyncpg.Record | None = await conn.fetchrow(READ_ACTIVE_SQL, *args)
                    return row
            except (asyncpg.ConnectionDoesNotExistError, asyncpg.InterfaceError, ConnectionError):
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    async def close(self) -> None:
        await self._pool.close()


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
