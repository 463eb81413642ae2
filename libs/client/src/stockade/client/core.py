"""The logic both clients share: building requests, the cache decisions, and reading answers (no I/O here)."""

from __future__ import annotations

import logging
import time
from typing import Any, TypeVar

import httpx

from stockade.client.cache import CachedEntry, ResponseCache
from stockade.client.calls import Call
from stockade.client.errors import (
    NotFoundError,
    ServerUnavailableError,
    StockadeClientError,
    error_from_response,
)
from stockade.client.settings import ClientSettings

T = TypeVar("T")

log = logging.getLogger("stockade.client")

API_KEY_HEADER = "X-API-Key"
API_KEY_QUERY = "api_key"


class ClientCore:
    """Holds the key, the settings and the cache; decides what to send and what to return."""

    def __init__(self, api_key: str, settings: ClientSettings, base_url: str) -> None:
        if not api_key:
            raise ValueError("an API key is required")
        self._api_key = api_key
        self.settings = settings
        self.base_url = base_url.rstrip("/")
        self.cache = ResponseCache()
        self.push_active = False

    def __repr__(self) -> str:  # the key never appears
        return f"ClientCore(base_url={self.base_url!r})"

    def build(
        self, client: httpx.Client | httpx.AsyncClient, call: Call[Any], entry: CachedEntry | None
    ) -> httpx.Request:
        headers: dict[str, str] = {}
        params = dict(call.params)
        if call.key_in_query:
            params[API_KEY_QUERY] = self._api_key
        else:
            headers[API_KEY_HEADER] = self._api_key
        if entry is not None and entry.etag is not None:
            headers["If-None-Match"] = entry.etag
        return client.build_request(call.method, call.path, params=params, json=call.json, headers=headers)

    def cached_entry(self, call: Call[Any]) -> CachedEntry | None:
        if call.cache_key is None or not self.settings.cache.enabled:
            return None
        return self.cache.get(call.cache_key)

    def trusted(self, call: Call[Any], entry: CachedEntry | None) -> bool:
        """With push on and connected, a recent prompt copy no event invalidated is served without a request
        (only prompt reads: no event tells about the other reads)."""
        trust = self.settings.cache.push_trust_s
        return (
            call.push_invalidated
            and entry is not None
            and self.push_active
            and trust > 0
            and not entry.invalidated
            and time.monotonic() - entry.confirmed_at < trust
        )

    def backoff(self, attempt: int) -> float:
        retry = self.settings.retry
        return float(min(retry.max_backoff_s, retry.backoff_s * 2 ** (attempt - 1)))

    def attempts(self, call: Call[Any]) -> int:
        return self.settings.retry.attempts if call.is_read else 1

    @staticmethod
    def retryable(call: Call[Any], outcome: httpx.Response | Exception) -> bool:
        """Reads only: transport errors (timeouts included) and 5xx. A 4xx is an answer; publishes are not
        retried (the server may have written the version before the connection broke)."""
        if not call.is_read:
            return False
        if isinstance(outcome, httpx.Response):
            return outcome.status_code >= 500
        return isinstance(outcome, httpx.TransportError)

    def finish(
        self,
        call: Call[T],
        entry: CachedEntry | None,
        outcome: httpx.Response | Exception,
        stamp: int | None = None,
    ) -> T:
        """The value of a call from its last outcome: parse, use the cached copy, or raise. ``stamp`` is the
        cache's invalidation clock taken before the request was sent."""
        if isinstance(outcome, httpx.Response):
            return self._answer(call, entry, outcome, stamp)
        if isinstance(outcome, httpx.TimeoutException | httpx.TransportError):
            return self._unreachable(call, entry, f"{type(outcome).__name__}: {outcome}")
        raise outcome

    def _answer(
        self, call: Call[T], entry: CachedEntry | None, response: httpx.Response, stamp: int | None
    ) -> T:
        status = response.status_code
        if status == 304 and entry is not None and call.cache_key is not None:
            self.cache.confirm(call.cache_key, stamp)
            value: T = entry.value
            return value
        if 200 <= status < 300:
            parsed = call.parse(response)
            if call.invalidates is not None:
                self.cache.invalidate(call.invalidates)
            if call.cache_key is not None and self.settings.cache.enabled:
                self.cache.put(call.cache_key, parsed, response.headers.get("ETag"), stamp)
            return parsed
        if status >= 500 and call.is_read:
            return self._unreachable(call, entry, f"server error {status}")
        raise error_from_response(response, uniform_read=call.uniform_read, what=call.what)

    def _unreachable(self, call: Call[T], entry: CachedEntry | None, reason: str) -> T:
        where = f"{call.method} {self.base_url}{call.path}"
        if entry is not None and call.is_read and self.settings.cache.serve_stale_when_unreachable:
            age = time.monotonic() - entry.confirmed_at
            log.warning(
                "prompt-api unreachable (%s on %s); serving the last good copy of %s (confirmed %.1f s ago)",
                reason,
                where,
                call.what,
                age,
            )
            value: T = entry.value
            return value
        raise ServerUnavailableError(f"prompt-api unreachable: {reason} on {where}")


def not_found_version(what: str, version: int) -> StockadeClientError:
    return NotFoundError(f"{what} has no version {version}", status_code=404, code="not_found")
