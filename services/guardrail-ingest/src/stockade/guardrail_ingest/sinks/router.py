"""Which sink a queued batch is written to: the store named in the batch (fixed when it was accepted).

:class:`StoreRouter` builds one sink per store kind on first use, from the deployment's connection settings, and
creates its schema once; every worker of the process shares it. A store that cannot be built or whose schema
cannot be made raises :class:`SinkError`, so its batches are nak'ed and retried like a store outage.
:class:`FixedStore` sends every batch to one sink (tests, and tools that write one store).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Protocol

from stockade.guardrail_ingest.settings import SinkSettings
from stockade.guardrail_ingest.sinks import build_sink
from stockade.guardrail_ingest.sinks.base import EventSink, SinkError

log = logging.getLogger(__name__)
STORE_KINDS: tuple[str, ...] = ("mongodb", "dynamodb", "clickhouse")


class Stores(Protocol):
    async def sink_for(self, kind: str) -> EventSink:
        """The sink of store ``kind``, its schema ready; SinkError when the store cannot be used now."""

    async def prepare(self) -> None:
        """Make the schema of the store most batches go to now (raises SinkError while it is unreachable)."""

    def ready(self) -> bool:
        """Whether the store most batches go to now has its schema."""

    async def aclose(self) -> None: ...


class FixedStore:
    """Every batch to ``sink``, whatever store it names."""

    def __init__(self, sink: EventSink) -> None:
        self.sink = sink
        self._ready = False

    async def sink_for(self, kind: str) -> EventSink:
        return self.sink

    async def prepare(self) -> None:
        await self.sink.ensure_schema()
        self._ready = True

    def ready(self) -> bool:
        return self._ready

    async def aclose(self) -> None:
        await self.sink.aclose()


class StoreRouter:
    """One sink per store kind, built and given its schema on first use; ``active()`` names the current store."""

    def __init__(
        self,
        settings: SinkSettings,
        active: Callable[[], str],
        build: Callable[[SinkSettings, str], EventSink] = build_sink,
    ) -> None:
        self._settings, self._active, self._build = settings, active, build
        self._sinks: dict[str, EventSink] = {}
        self._ready: set[str] = set()
        self._locks: dict[str, asyncio.Lock] = {k: asyncio.Lock() for k in STORE_KINDS}

    async def sink_for(self, kind: str) -> EventSink:
        if kind not in STORE_KINDS:
            raise SinkError(f"unknown store {kind!r}")
        if kind in self._ready:
            return self._sinks[kind]
        async with self._locks[kind]:
            if kind not in self._sinks:
                try:
                    self._sinks[kind] = self._build(self._settings, kind)
                except Exception as exc:  # missing client library (chdb extra), malformed URL
                    raise SinkError(f"{kind}: cannot build the store: {type(exc).__name__}: {exc}") from exc
            sink = self._sinks[kind]
            if kind not in self._ready:
                await sink.ensure_schema()
                self._ready.add(kind)
                log.info("store %s ready (table %s)", kind, self._settings.table)
        return sink

    async def prepare(self) -> None:
        await self.sink_for(self._active())

    def ready(self) -> bool:
        return self._active() in self._ready

    async def aclose(self) -> None:
        for sink in self._sinks.values():
            with contextlib.suppress(Exception):
                await sink.aclose()
        self._sinks.clear()
        self._ready.clear()
