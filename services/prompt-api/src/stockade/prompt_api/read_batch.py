"""Natural batching of the hot read's statement: requests that arrive while every connection is busy go out
together, as one statement, when a connection frees up.

Nothing is cached or reused between requests: each request is one row of the statement, resolved from the rows
current when the statement runs, exactly as if it had run alone. A request alone on an idle pool goes out at once,
as a batch of one. Under load this saves a round trip (two socket syscalls on each side) and PostgreSQL's
per-statement overhead for every request beyond the first of a batch. The answer, the work done per request (one
row, one hash, one comparison) and its timing do not depend on what the row finds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import asyncpg

from stockade.runtime.db_types import utcnow

# $1 key ids, $2 project ids, $3 prompt names, $4 the SHA-256 of the presented keys (text arrays of equal length),
# $5 now; ``i`` numbers the requests from 1. Every request gets exactly one row, whatever exists (left joins from
# the request), and the content is read only when the key matches, is live and its owner is an organisation
# member: an unknown key, a foreign project and an unknown prompt do the same work (finding L4). The caller
# still compares the hash in constant time and checks revocation and expiry itself.
# An ingest key (scope ingest: guardrail-ingest only) finds no key row, so it fails like an unknown key.
READ_ACTIVE_BATCH_SQL = """
SELECT t.i, v.version,
       CASE WHEN opened THEN v.content::text END AS content,
       CASE WHEN opened THEN v.config::text END AS config,
       v.sha256, v.commit_message, v.published_at, v.published_by,
       k.key_hash, k.revoked_at, k.expires_at, m.user_id AS member
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[])
     WITH ORDINALITY AS t(key_id, project_id, prompt_name, key_hash, i)
LEFT OUTER JOIN projects AS p ON p.id = t.project_id
LEFT OUTER JOIN prompts AS pr ON pr.project_id = p.id AND pr.name = t.prompt_name
LEFT OUTER JOIN prompt_versions AS v ON v.prompt_id = pr.id AND v.version = pr.active_version
LEFT OUTER JOIN api_keys AS k ON k.id = t.key_id AND k.scope IS DISTINCT FROM 'ingest'
LEFT OUTER JOIN organisation_members AS m ON m.organisation_id = p.organisation_id AND m.user_id = k.owner_id
CROSS JOIN LATERAL (
    SELECT k.key_hash = t.key_hash AND k.revoked_at IS NULL
           AND (k.expires_at IS NULL OR k.expires_at > $5::timestamptz) AND m.user_id IS NOT NULL AS opened
) AS o
"""

Args = tuple[str, str, str, str]  # key id, project id, prompt name, SHA-256 of the presented key
_DROPPED = (asyncpg.ConnectionDoesNotExistError, asyncpg.InterfaceError, ConnectionError)


class ReadBatcher:
    """At most ``pool size`` statements in flight; whatever queued meanwhile goes in the next one."""

    def __init__(self, pool: asyncpg.Pool, in_flight: int, max_batch: int = 64) -> None:
        self._pool = pool
        self._in_flight = in_flight
        self._max_batch = max_batch
        self._running = 0
        self._queue: list[tuple[Args, asyncio.Future[asyncpg.Record | None]]] = []
        self._tasks: set[asyncio.Task[None]] = set()

    async def fetch(self, args: Args) -> asyncpg.Record | None:
        future: asyncio.Future[asyncpg.Record | None] = asyncio.get_running_loop().create_future()
        self._queue.append((args, future))
        if self._running < self._in_flight:
            self._running += 1
            task = asyncio.create_task(self._drain())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return await future

    async def _drain(self) -> None:
        try:
            while self._queue:
                batch = self._queue[: self._max_batch]
                del self._queue[: self._max_batch]
                try:
                    rows = await self._run([args for args, _ in batch])
                except BaseException as exc:
                    failed = isinstance(exc, Exception)
                    for _, future in batch:
                        if future.done():
                            continue
                        if failed:
                            future.set_exception(exc)
                        else:
                            future.cancel()
                    if not failed:  # cancelled (shutdown): the waiting requests are cancelled too
                        raise
                    continue
                by_index = {row["i"]: row for row in rows}
                for n, (_, future) in enumerate(batch, 1):
                    if not future.done():
                        future.set_result(by_index.get(n))
        finally:
            self._running -= 1

    async def _run(self, batch: Sequence[Args]) -> list[asyncpg.Record]:
        """One statement; a connection the server dropped is retried once on a fresh one."""
        columns = tuple([a[n] for a in batch] for n in range(4))
        now = utcnow()
        for attempt in (1, 2):
            try:
                async with self._pool.acquire() as conn:
                    rows: list[asyncpg.Record] = await conn.fetch(READ_ACTIVE_BATCH_SQL, *columns, now)
                    return rows
            except _DROPPED:
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")
