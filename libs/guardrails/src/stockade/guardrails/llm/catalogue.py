"""The model catalogue as an agent sees it: one model's prices, context window and capabilities from model-api.

:class:`CatalogueClient` asks model-api over NATS request/reply (``model.cmd.get.v1``) and keeps the answer in a
cache until a ``model.changed.v1`` event names the model, or a ``dbconfig.activated.v1`` event says another
database configuration (with its own catalogue) is active, so a price changed or a configuration activated in the
console reaches a running agent on its next call. It takes a connected nats-py client (or
anything with ``request`` and ``subscribe``): the library does not depend on a bus client.

When model-api does not answer (no bus, timeout, an error reply) :meth:`CatalogueClient.get` returns None and
:class:`~stockade.guardrails.llm.rails.LLMRails` falls back to the prices in the YAML model configuration.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from stockade.contracts import ModelChanged
from stockade.contracts.nats_sync import sync_with_server
from stockade.contracts.replies import ErrorReply, ModelGetQuery, ModelGetReply, PricePoint
from stockade.contracts.subjects import DBCONFIG_ACTIVATED, MODEL_CHANGED, MODEL_CMD_GET

log = logging.getLogger(__name__)


def _price(value: Any) -> Decimal | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        price = Decimal(str(value))
    except InvalidOperation:
        return None
    return price if price.is_finite() and price >= 0 else None


@dataclass(frozen=True)
class CatalogueModel:
    """One catalogue entry, in the spec's fields (prices per million tokens, in ``currency``)."""

    provider: str
    model_id: str
    context_window: int | None = None
    input_price_per_mtok: Decimal | None = None
    output_price_per_mtok: Decimal | None = None
    capabilities: tuple[str, ...] = ()
    currency: str = "USD"
    # Effective-dated prices, oldest first: (effective_at, input, output). Empty from an older model-api.
    price_history: tuple[tuple[datetime, Decimal | None, Decimal | None], ...] = ()

    def prices_at(self, when: datetime | None = None) -> tuple[Decimal | None, Decimal | None]:
        """Input and output price per million tokens in force at ``when`` (default: now): the history's latest
        entry not after ``when``; the entry's current prices when there is no history or none is in force yet
        (a price recorded before the history began)."""
        when = when or datetime.now(UTC)
        in_force = [(i, o) for at, i, o in self.price_history if at <= when]
        if in_force:
            return in_force[-1]
        return self.input_price_per_mtok, self.output_price_per_mtok

    @classmethod
    def from_record(
        cls, provider: str, record: dict[str, Any], history: Sequence[PricePoint] | None = None
    ) -> CatalogueModel:
        window = record.get("contextWindow")
        prices = []
        for point in history or ():
            try:
                at = datetime.fromisoformat(point.effective_at)
            except ValueError:
                continue
            if at.tzinfo is None:
                continue
            prices.append((at, _price(point.input_price_per_m_token), _price(point.output_price_per_m_token)))
        prices.sort(key=lambda p: p[0])
        return cls(
            price_history=tuple(prices),
            provider=provider,
            model_id=str(record["model_id"]),
            context_window=window if isinstance(window, int) and not isinstance(window, bool) else None,
            input_price_per_mtok=_price(record.get("inputPricePerMToken")),
            output_price_per_mtok=_price(record.get("outputPricePerMToken")),
            capabilities=tuple(str(c) for c in record.get("capabilities") or ()),
            currency=str(record.get("currency") or "USD"),
        )


@dataclass
class CatalogueClient:
    """Cached ``model.cmd.get.v1`` look-ups, invalidated by ``model.changed.v1`` (that model) and by
    ``dbconfig.activated.v1`` (everything: the look-ups answer from the active configuration's catalogue).

    ``nc``: a connected nats-py client. ``timeout``: seconds to wait for model-api's reply.
    Call :meth:`start` once (subscribes to the change events) and :meth:`close` at the end."""

    nc: Any
    timeout: float = 2.0
    _cache: dict[tuple[str, str], CatalogueModel | None] = field(default_factory=dict, init=False)
    _sub: Any = field(default=None, init=False)
    _activations: Any = field(default=None, init=False)
    requests: int = field(default=0, init=False)  # replies asked of model-api (cache misses)
    # Bumped by every change event: a reply requested before an event is used once but not cached.
    _generation: int = field(default=0, init=False)
    # The event loop of the NATS connection: from another loop (LLMRails.generate()'s asyncio.run) only the cache
    # answers, as a request there would wait for a loop that is not running.
    _loop: asyncio.AbstractEventLoop | None = field(default=None, init=False)

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        if self._sub is None:
            self._sub = await self.nc.subscribe(MODEL_CHANGED, cb=self._on_change)
            self._activations = await self.nc.subscribe(DBCONFIG_ACTIVATED, cb=self._on_activation)
            await sync_with_server(self.nc)

    async def close(self) -> None:
        for name in ("_sub", "_activations"):
            sub = getattr(self, name)
            if sub is not None:
                setattr(self, name, None)
                await sub.unsubscribe()

    async def _on_activation(self, msg: Any) -> None:
        """Another database configuration is active: its catalogue answers from now on, so forget every entry."""
        self._generation += 1
        self._cache.clear()

    async def _on_change(self, msg: Any) -> None:
        self._generation += 1
        try:
            event = ModelChanged.model_validate_json(msg.data)
        except ValueError:
            self._cache.clear()  # an event we cannot read: forget everything rather than keep a stale price
            return
        self._cache.pop((event.provider.strip().lower(), event.model_id), None)

    def cached(self, provider: str, model_id: str) -> CatalogueModel | None:
        return self._cache.get((provider.strip().lower(), model_id))

    async def get(self, provider: str, model_id: str) -> CatalogueModel | None:
        """The model from the cache, else from model-api; None when model-api has no such model or no answer
        (an unanswered look-up is not cached, so the next call asks again)."""
        key = (provider.strip().lower(), model_id)
        if key in self._cache:
            return self._cache[key]
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = loop
        elif loop is not self._loop:
            return None
        self.requests += 1
        generation = self._generation
        payload = ModelGetQuery(provider=key[0], model_id=model_id).to_bytes()
        try:
            reply = await self.nc.request(MODEL_CMD_GET, payload, timeout=self.timeout)
            error = ErrorReply.parse(reply.data)
            answer = None if error is not None else ModelGetReply.model_validate_json(reply.data)
        except Exception as exc:  # no responder, timeout, closed connection, garbage: fall back to YAML
            log.warning("%s for %s/%s failed: %s: %s", MODEL_CMD_GET, *key, type(exc).__name__, exc)
            return None
        if error is not None:
            if error.error.code == "not_found" and generation == self._generation:
                self._cache[key] = None
            return None
        if answer is None or answer.model is None:
            return None
        model = CatalogueModel.from_record(key[0], answer.model, answer.price_history)
        if generation == self._generation:
            self._cache[key] = model
        return model


__all__ = ["CatalogueClient", "CatalogueModel"]
