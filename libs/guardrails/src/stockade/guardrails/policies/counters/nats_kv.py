"""Counters in a NATS JetStream key-value bucket, shared by every process of a deployment.

Each update is a compare-and-set: read the value and its revision, then ``kv.update(..., last=revision)`` (or
``kv.create()`` for a new key, which fails when the key exists). When another writer got there first the server
rejects the write with a wrong-last-sequence error and the add is retried on fresh data, so concurrent workers
never lose an increment and never overshoot a limit.

Every ``add``/``get`` (connecting included) is bounded by ``timeout_seconds``: when NATS is unreachable the call
raises :class:`~stockade.guardrails.errors.CheckUnavailableError` within it (fail closed), never after minutes of
reconnecting. Nothing listening is found by a TCP probe before nats-py's first connect (which can loop far past its
``connect_timeout``, nats-io/nats.py#645); a connection lost mid-run fails each call at once while the client
reconnects in the background; a client that gave up is replaced on the next call.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import random
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from stockade.contracts.streams import BUCKETS, BucketSpec
from stockade.contracts.subjects import KV_RATE_LIMITS
from stockade.guardrails.errors import CheckUnavailableError
from stockade.guardrails.extras import require

if TYPE_CHECKING:
    from nats.aio.client import Client
    from nats.js.kv import KeyValue

DEFAULT_TTL_S = 86400.0
DEFAULT_MAX_BYTES = BUCKETS[KV_RATE_LIMITS].max_bytes
DEFAULT_TIMEOUT_S = 2.0
log = logging.getLogger(__name__)


def redacted(url: str | None) -> str:
    """The URL without user information (``nats://user:pass@host`` -> ``nats://***@host``)."""
    if not url:
        return "<none>"
    return re.sub(r"//[^/@]*@", "//***@", url)


def counter_key(key: str) -> str:
    """A KV-safe key for any string (session ids may hold characters KV keys do not allow)."""
    return base64.urlsafe_b64encode(key.encode("utf-8")).decode("ascii").rstrip("=") or "_"


class NatsKVCounterStore:
    """Counter store on a JetStream KV bucket. Give it a bucket handle, or a URL to connect to lazily."""

    def __init__(
        self,
        kv: KeyValue | None = None,
        *,
        url: str | None = None,
        bucket: str = KV_RATE_LIMITS,
        ttl_seconds: float = DEFAULT_TTL_S,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_retries: int = 100,
        max_reconnect_attempts: int = 60,
        reconnect_wait_seconds: float = 0.5,
        timeout_seconds: float = DEFAULT_TIMEOUT_S,
        inbox_prefix: str | None = None,
    ) -> None:
        if kv is None and url is None:
            raise ValueError("NatsKVCounterStore needs a KeyValue bucket or a NATS url")
        self._kv = kv
        self._url, self._bucket_name, self._ttl, self._max_bytes = url, bucket, ttl_seconds, max_bytes
        self._max_retries = max_retries
        self._reconnect = (max_reconnect_attempts, reconnect_wait_seconds)
        if timeout_seconds <= 0:
            raise ValueError("timeout_seconds must be positive")
        self._timeout = timeout_seconds
        self._inbox_prefix = inbox_prefix
        self._nc: Client | None = None
        self._connect_lock = asyncio.Lock()

    @staticmethod
    async def open_bucket(
        js: Any, bucket: str, ttl_seconds: float = DEFAULT_TTL_S, max_bytes: int = DEFAULT_MAX_BYTES
    ) -> KeyValue:
        """Bind to ``bucket``, creating it (bucket-level TTL, a byte limit) when it does not exist."""
        require("nats.js", extra="nats", feature="the NATS rate-limit backend")
        from stockade.contracts.jetstream import ensure_bucket

        return await ensure_bucket(js, BucketSpec(bucket, max_bytes), ttl_s=ttl_seconds)

    async def _bucket(self) -> KeyValue:
        async with self._connect_lock:
            if self._nc is not None and not self._nc.is_connected:
                if not self._nc.is_closed:  # reconnecting in the background: fail now, not after a timeout
                    raise CheckUnavailableError(
                        f"rate-limit store at {redacted(self._url)} unavailable: connection lost, reconnecting"
                    )
                self._nc, self._kv = None, None  # the client gave up: connect afresh
            if self._kv is None:
                self._kv = await self._connect()
            return self._kv

    async def _connect(self) -> KeyValue:
        nats = require("nats", extra="nats", feature="the NATS rate-limit backend")
        try:
            await _reachable(str(self._url), self._timeout)
            attempts, wait = self._reconnect
            prefix = self._inbox_prefix or _user_reply_prefix(str(self._url))
            options: dict[str, Any] = {"inbox_prefix": prefix} if prefix else {}
            self._nc = await nats.connect(
                self._url,
                **options,
                connect_timeout=self._timeout,
                max_reconnect_attempts=attempts,
                reconnect_time_wait=wait,
                error_cb=_quiet,
            )
            return await self.open_bucket(
                self._nc.jetstream(timeout=self._timeout), self._bucket_name, self._ttl, self._max_bytes
            )
        except Exception as exc:  # connection refused, timeouts, no JetStream
            await self._discard()
            raise CheckUnavailableError(
                f"rate-limit store at {redacted(self._url)} unavailable: {type(exc).__name__}"
            ) from exc

    async def _discard(self) -> None:
        nc, self._nc, self._kv = self._nc, None, None
        if nc is not None:
            with contextlib.suppress(Exception):
                await nc.close()

    async def add(self, key: str, amount: int, limit: int | None = None) -> tuple[bool, int]:
        result: tuple[bool, int] = await self._bounded(self._add(key, amount, limit), "updating a counter")
        return result

    async def get(self, key: str) -> int:
        result: int = await self._bounded(self._get(key), "reading a counter")
        return result

    async def _bounded(self, call: Any, what: str) -> Any:
        """``call`` within ``timeout_seconds``; every failure of the store is CheckUnavailableError."""
        nats_errors = require("nats.errors", extra="nats", feature="the NATS rate-limit backend")
        try:
            return await asyncio.wait_for(call, timeout=self._timeout)
        except TimeoutError as exc:  # wait_for's own, or a JetStream request's
            raise CheckUnavailableError(
                f"rate-limit store: no answer within {self._timeout} s {what} (NATS unreachable?)"
            ) from exc
        except nats_errors.Error as exc:  # server gone, connection closed
            raise CheckUnavailableError(f"rate-limit store: {type(exc).__name__} {what}") from exc

    async def _add(self, key: str, amount: int, limit: int | None) -> tuple[bool, int]:
        kv = await self._bucket()
        from nats.js.errors import KeyNotFoundError, KeyWrongLastSequenceError

        k = counter_key(key)
        for attempt in range(self._max_retries):
            revision: int | None
            try:
                entry = await kv.get(k)
                current, revision = int(entry.value or b"0"), entry.revision
            except KeyNotFoundError:  # also covers a deleted key (KeyDeletedError)
                current, revision = 0, None
            new = current + amount
            if limit is not None and new > limit:
                return False, current
            try:
                if revision is None:
                    await kv.create(k, str(new).encode())
                else:
                    await kv.update(k, str(new).encode(), last=revision)
                return True, new
            except KeyWrongLastSequenceError:
                # Someone else wrote first: back off a little (jittered) and retry on fresh data.
                await asyncio.sleep(random.uniform(0, 0.002 * min(attempt + 1, 10)))
        raise CheckUnavailableError(f"counter {key!r}: too much contention ({self._max_retries} attempts)")

    async def _get(self, key: str) -> int:
        kv = await self._bucket()
        from nats.js.errors import KeyNotFoundError

        try:
            entry = await kv.get(counter_key(key))
        except KeyNotFoundError:
            return 0
        return int(entry.value or b"0")

    async def close(self) -> None:
        nc, self._nc, self._kv = self._nc, None, None
        if nc is not None:
            try:
                await asyncio.wait_for(nc.drain(), timeout=self._timeout)
            except Exception:  # disconnected or slow: close without draining
                with contextlib.suppress(Exception):
                    await nc.close()


async def _reachable(url: str, timeout_s: float) -> None:
    """Raise ConnectionError at once when no server of ``url`` accepts TCP (nats-py would loop on its connect)."""
    for server in url.split(","):
        server = server.strip()
        parsed = urlsplit(server if "://" in server else f"nats://{server}")
        try:
            _, writer = await asyncio.wait_for(
                asyncio.open_connection(parsed.hostname or "127.0.0.1", parsed.port or 4222),
                timeout=timeout_s,
            )
        except (OSError, TimeoutError):
            continue
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
        return
    raise ConnectionError("no NATS server accepts connections")


async def _quiet(exc: Exception) -> None:
    log.debug("rate-limit store NATS client: %s: %s", type(exc).__name__, exc)


def _user_reply_prefix(url: str) -> str | None:
    """``_INBOX_<user>`` for a URL naming a NATS user (deploy/nats lets each user read its own replies only),
    else None (nats-py's ``_INBOX``)."""
    from urllib.parse import unquote

    from stockade.contracts.subjects import user_reply_prefix

    first = url.split(",")[0].strip()
    user = urlsplit(first if "://" in first else f"nats://{first}").username
    try:
        return user_reply_prefix(unquote(user)) if user else None
    except ValueError:  # a user name that cannot be a subject token: the default inbox
        return None
