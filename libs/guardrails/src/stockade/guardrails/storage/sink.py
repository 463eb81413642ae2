"""BackendGuardrailSink (spec 4.3): ``GET /api/v1/db_type`` once, then ``POST /api/v1/guardrails/{db_type}``.

Retries with exponential backoff and jitter on connection errors, timeouts, 429 and 5xx; a retried POST is safe
because the backend dedupes on ``event_id`` (and on the batch id derived from the event ids). A 413 is never
retried as it was: the batch is halved until the event the backend cannot take stands alone, and only that one
is refused. A 409 means the
backend's store changed since the db_type was cached: the sink asks again once and resends. Failures come back
as a :class:`SendOutcome` value; nothing here raises into the agent.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import ssl
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from stockade.contracts.ingest_wire import DB_TYPES, RunInfo
from stockade.guardrails.events import GuardrailEvent
from stockade.guardrails.storage.config import StorageConfig
from stockade.guardrails.storage.result import SendOutcome

log = logging.getLogger(__name__)

DB_TYPE_PATH = "/api/v1/db_type"
EVENTS_PATH = "/api/v1/guardrails/{db_type}"
_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
INGEST_KEY_ENV = "STOCKADE_INGEST_KEY"
"""The project's ingest key when ``guardrails.storage.api_key`` is not set (guardrail-ingest requires one)."""


class _Permanent(Exception):
    """The backend refused the request; resending the same data cannot succeed."""


class _TooLarge(_Permanent):
    """413: the batch, or one event in it, is larger than the backend takes."""


class _StoreChanged(Exception):
    """409: the backend is configured for another db_type than the cached one."""


class BackendGuardrailSink:
    """Sends a run's events to guardrail-ingest in batches of ``config.batch_size``."""

    def __init__(
        self,
        config: StorageConfig,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.config = config
        self._transport = transport
        env = os.environ if environ is None else environ
        # The ingest key: the configuration's, else STOCKADE_INGEST_KEY (read once; never logged).
        self._key = config.api_key.get_secret_value() if config.api_key else env.get(INGEST_KEY_ENV) or None
        self._db_type: str | None = None
        self._ssl: ssl.SSLContext | None = None  # loading the CA bundle costs ~80 ms: once per sink

    @property
    def cached_db_type(self) -> str | None:
        return self._db_type

    async def send(self, run: RunInfo, events: Sequence[GuardrailEvent]) -> SendOutcome:
        """POST ``events`` in order; stops at the first batch that fails and reports how far it got.

        A batch refused with 413 (too many bytes, or one event too large to queue) is halved and each half sent
        again, down to single events: an event refused alone is counted in ``rejected`` with the backend's
        message and the rest of the run goes on.
        """
        sent = 0
        refused: list[str] = []
        todo = deque(
            events[i : i + self.config.batch_size] for i in range(0, len(events), self.config.batch_size)
        )
        try:
            async with self._client() as client:
                while todo:
                    chunk = todo.popleft()
                    body = {
                        "run": run.model_dump(mode="json"),
                        "events": [e.model_dump(mode="json") for e in chunk],
                    }
                    try:
                        await self._post_batch(client, body)
                    except _TooLarge as exc:
                        if len(chunk) > 1:
                            half = len(chunk) // 2
                            todo.extendleft((chunk[half:], chunk[:half]))
                            continue
                        refused.append(str(exc))
                        continue
                    sent += len(chunk)
        except _Permanent as exc:
            done = sent + len(refused)
            return SendOutcome(
                sent,
                self._db_type,
                str(exc),
                retryable=False,
                remaining=len(events) - done,
                rejected=len(refused),
            )
        except (httpx.HTTPError, _StoreChanged, ValueError) as exc:
            message = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            done = sent + len(refused)
            return SendOutcome(
                sent,
                self._db_type,
                message,
                retryable=True,
                remaining=len(events) - done,
                rejected=len(refused),
            )
        if refused:
            error = f"{len(refused)} event(s) refused as too large, first: {refused[0]}"
            return SendOutcome(sent, self._db_type, error, retryable=False, rejected=len(refused))
        return SendOutcome(sent, self._db_type)

    async def fetch_db_type(self) -> str:
        """The backend's db_type (asked once per sink, then cached)."""
        async with self._client() as client:
            return await self._db_type_cached(client)

    # -- internals ----------------------------------------------------------------------------------------
    def _client(self) -> httpx.AsyncClient:
        headers = {"User-Agent": "stockade-guardrails/storage"}
        if self._key:
            headers["X-API-Key"] = self._key
        if self._ssl is None:
            if self.config.backend_url.startswith("https://"):
                self._ssl = ssl.create_default_context()
            else:  # plain http: nothing to verify; a context of ours, or httpx builds one per client (~3 ms)
                self._ssl = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
                self._ssl.check_hostname = False
                self._ssl.verify_mode = ssl.CERT_NONE
        return httpx.AsyncClient(
            base_url=self.config.backend_url.rstrip("/"),
            verify=self._ssl,
            timeout=self.config.timeout_s,
            headers=headers,
            transport=self._transport,
        )

    async def _db_type_cached(self, client: httpx.AsyncClient) -> str:
        if self._db_type is None:
            reply = await self._request(client, "GET", DB_TYPE_PATH)
            db_type = reply.get("db_type")
            if db_type not in DB_TYPES:
                raise _Permanent(f"backend answered an unknown db_type {db_type!r}")
            self._db_type = db_type
        return self._db_type

    async def _post_batch(self, client: httpx.AsyncClient, body: dict[str, Any]) -> None:
        for refreshed in (False, True):
            db_type = await self._db_type_cached(client)
            try:
                await self._request(client, "POST", EVENTS_PATH.format(db_type=db_type), json=body)
                return
            except _StoreChanged:
                log.info("guardrail backend no longer stores %s; asking its db_type again", db_type)
                self._db_type = None
                if refreshed:
                    raise

    async def _request(
        self, client: httpx.AsyncClient, method: str, path: str, json: Any = None
    ) -> dict[str, Any]:
        attempt = 0
        while True:
            retry_after: float | None = None
            try:
                response = await client.request(method, path, json=json)
            except httpx.TransportError:
                if attempt >= self.config.max_retries:
                    raise
            else:
                if response.status_code < 300:
                    data = response.json()
                    return data if isinstance(data, dict) else {}
                if response.status_code == 409:
                    raise _StoreChanged(_error_text(response))
                if response.status_code == 413:
                    raise _TooLarge(f"{method} {path}: 413 {_error_text(response)}")
                if response.status_code not in _RETRY_STATUSES:
                    raise _Permanent(f"{method} {path}: {response.status_code} {_error_text(response)}")
                retry_after = _retry_after(response)
                if attempt >= self.config.max_retries:
                    raise httpx.HTTPStatusError(
                        f"{method} {path}: {response.status_code} {_error_text(response)}",
                        request=response.request,
                        response=response,
                    )
            await asyncio.sleep(self._delay(attempt, retry_after))
            attempt += 1

    def _delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Exponential backoff with jitter (not cryptography); a server's Retry-After wins, capped."""
        if retry_after is not None:
            return min(self.config.backoff_max_s, retry_after)
        base = min(self.config.backoff_max_s, self.config.backoff_initial_s * (2**attempt))
        return float(base * (0.5 + random.random() / 2))


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after", "")
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # absent, or an HTTP date (not worth parsing for a sub-minute backoff)


def _error_text(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:200]
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return str(body["error"].get("message", ""))[:500]
    return str(body)[:200]
