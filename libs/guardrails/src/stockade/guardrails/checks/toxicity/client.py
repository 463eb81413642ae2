"""Async client of a remote text-classification service.

Wire protocol: ``POST <url>`` with JSON ``{"inputs": "<text>"}`` (and ``Authorization: Bearer <key>`` when a
key is configured). The reply is a list of ``{"label": str, "score": float}`` objects, or that list wrapped in
one more list (the Hugging Face text-classification shape for a single input).

The client pools connections, retries timeouts, network errors, 429 and 5xx with exponential backoff, and
stops calling a failing service for a while (circuit breaker). A malformed reply is a failure, not retried.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from stockade.guardrails.checks.config import ToxicityConfig
from stockade.guardrails.checks.toxicity.breaker import CircuitBreaker
from stockade.guardrails.errors import CheckUnavailableError

_RETRY_STATUS = {429, 500, 502, 503, 504}


class MalformedResponseError(CheckUnavailableError):
    """The service answered, but not with a list of {label, score}."""


class ClassificationClient:
    def __init__(self, config: ToxicityConfig, *, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.config = config
        self.breaker = CircuitBreaker(config.breaker_failures, config.breaker_reset_s)
        self._transport = transport
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _http(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop or self._client.is_closed:
            key = self.config.api_key.get_secret_value() if self.config.api_key else ""
            headers = {"Authorization": f"Bearer {key}"} if key else {}
            self._client = httpx.AsyncClient(
                timeout=self.config.request_timeout_s,
                limits=httpx.Limits(max_connections=self.config.max_connections),
                headers=headers,
                transport=self._transport,
            )
            self._loop = loop
        return self._client

    async def aclose(self) -> None:
        if self._client is not None and self._loop is asyncio.get_running_loop():
            await self._client.aclose()
        self._client = None

    async def classify(self, text: str) -> list[tuple[str, float]]:
        if not self.breaker.allow():
            raise CheckUnavailableError(f"toxicity service circuit is open ({self.config.url})")
        try:
            labels = await self._with_retries(text)
        except Exception:
            self.breaker.failure()
            raise
        self.breaker.success()
        return labels

    async def _with_retries(self, text: str) -> list[tuple[str, float]]:
        cfg = self.config
        last: Exception | None = None
        for attempt in range(cfg.retries + 1):
            if attempt:
                await asyncio.sleep(cfg.backoff_s * 2 ** (attempt - 1))
            try:
                resp = await self._http().post(cfg.url, json={"inputs": text})
            except httpx.TransportError as exc:  # timeouts, refused connections, resets
                last = exc
                continue
            if resp.status_code in _RETRY_STATUS:
                last = CheckUnavailableError(f"toxicity service returned {resp.status_code}")
                continue
            if resp.status_code >= 400:
                raise CheckUnavailableError(f"toxicity service returned {resp.status_code}")
            return parse_labels(resp)
        raise CheckUnavailableError(
            f"toxicity service failed after {cfg.retries + 1} attempts: {type(last).__name__}: {last}"
        )


def parse_labels(resp: httpx.Response) -> list[tuple[str, float]]:
    try:
        body: Any = resp.json()
    except ValueError as exc:
        raise MalformedResponseError("toxicity service reply is not JSON") from exc
    if isinstance(body, list) and len(body) == 1 and isinstance(body[0], list):
        body = body[0]
    if not isinstance(body, list) or not body:
        raise MalformedResponseError("toxicity service reply is not a non-empty list of {label, score}")
    out = []
    for item in body:
        if not isinstance(item, dict) or not isinstance(item.get("label"), str):
            raise MalformedResponseError("toxicity service reply item lacks a string 'label'")
        score = item.get("score")
        if isinstance(score, bool) or not isinstance(score, int | float) or not 0.0 <= float(score) <= 1.0:
            raise MalformedResponseError("toxicity service reply item lacks a 'score' in [0, 1]")
        out.append((item["label"], float(score)))
    return out
