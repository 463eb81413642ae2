"""The active store: model-api's active database configuration, followed over NATS (README, "Which store").

:class:`ActiveStore` is the state and its ordering rule (plain code, tested without a broker).
:class:`ActiveStoreFollower` keeps it current: at start-up it asks model-api (``dbconfig.cmd.active.v1``), else
reads the last ``dbconfig.activated.v1`` kept in the stream ``MODELS``, else keeps the deployment default; then it
follows ``dbconfig.activated.v1`` (a FastStream subscriber on the service's broker) and asks model-api again every
``resync_s``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from faststream.nats import NatsBroker
from faststream.nats.subscriber.usecases import CoreSubscriber
from nats.aio.client import Client
from pydantic import ValidationError

from stockade.contracts import ActiveDbConfig, DbConfigActivated, subjects
from stockade.guardrail_ingest.settings import ActiveStoreSettings
from stockade.guardrail_ingest.sinks.router import STORE_KINDS
from stockade.runtime.bus import on_event

log = logging.getLogger(__name__)
Source = Literal["default", "model-api", "stream", "event"]


@dataclass(frozen=True)
class ActiveState:
    """Which store new batches go to, and where this replica learnt it."""

    db_type: str
    source: Source
    db_config_id: str | None = None
    name: str | None = None
    activated_at: datetime | None = None

    def as_json(self) -> dict[str, str | None]:
        return {
            "db_type": self.db_type,
            "db_config_id": self.db_config_id,
            "name": self.name,
            "activated_at": self.activated_at.isoformat() if self.activated_at else None,
            "source": self.source,
        }


class ActiveStore:
    """The current :class:`ActiveState`; ``offer`` applies a candidate when the ordering rule allows it."""

    def __init__(self, default_kind: str, on_change: Callable[[ActiveState], None] | None = None) -> None:
        self.state = ActiveState(db_type=default_kind, source="default")
        self.changes = 0  # offers applied: a reply to a request sent before a change may be stale
        self._on_change = on_change

    @property
    def db_type(self) -> str:
        return self.state.db_type

    def offer(self, candidate: ActiveState, *, authoritative: bool = False) -> bool:
        """Apply ``candidate`` when it is later than the current state (``activated_at``), or unconditionally when
        ``authoritative`` (model-api's reply with no change since the request). Returns whether it changed."""
        if candidate.db_type not in STORE_KINDS:
            log.error(
                "active configuration %s names store %r, which this release cannot write; keeping %s",
                candidate.db_config_id,
                candidate.db_type,
                self.state.db_type,
            )
            return False
        current = self.state
        same = (candidate.db_config_id, candidate.db_type, candidate.activated_at) == (
            current.db_config_id,
            current.db_type,
            current.activated_at,
        )
        if same:
            if authoritative:
                self.state = candidate  # the same state, now confirmed by model-api
            return False
        if current.activated_at is None:  # the deployment default, or a state without a time
            later = True
        elif candidate.activated_at is None:
            later = False
        else:
            later = candidate.activated_at > current.activated_at
        if not (authoritative or later):
            return False
        self.state = candidate
        self.changes += 1
        level = logging.INFO if candidate.db_type == current.db_type else logging.WARNING
        log.log(
            level,
            "active store %s (configuration %s %r, activated %s, from %s); was %s (from %s)",
            candidate.db_type,
            candidate.db_config_id,
            candidate.name,
            candidate.activated_at.isoformat() if candidate.activated_at else "-",
            candidate.source,
            current.db_type,
            current.source,
        )
        if self._on_change is not None and candidate.db_type != current.db_type:
            self._on_change(candidate)
        return True


def from_reply(reply: ActiveDbConfig) -> ActiveState:
    return ActiveState(
        db_type=reply.db_type,
        source="model-api",
        db_config_id=reply.db_config_id,
        name=reply.name,
        activated_at=reply.activated_at,
    )


SCHEMA_VERSION = 1
"""The version of ``dbconfig.activated.v1`` and of the ``dbconfig.cmd.active.v1`` reply this release reads."""


def from_event(event: DbConfigActivated, source: Source) -> ActiveState | None:
    """None when the event cannot be followed as it is (then ask model-api): an older producer's event that
    does not say which store, or a schema version newer than this release reads."""
    if event.schema_version > SCHEMA_VERSION:
        log.warning(
            "%s of schema version %d (this release reads %d): asking model-api instead",
            subjects.DBCONFIG_ACTIVATED,
            event.schema_version,
            SCHEMA_VERSION,
        )
        return None
    if event.db_type is None:
        return None
    return ActiveState(
        db_type=event.db_type,
        source=source,
        db_config_id=event.db_config_id,
        name=event.name,
        activated_at=event.activated_at or event.occurred_at,
    )


class ActiveStoreFollower:
    """Keeps an :class:`ActiveStore` current over NATS: ``declare`` its subscriber on the broker, ``start`` once the
    connection is up, ``stop`` at the end."""

    def __init__(self, store: ActiveStore, settings: ActiveStoreSettings) -> None:
        self.store, self.settings = store, settings
        self._nc: Client | None = None
        self._subscriber: CoreSubscriber | None = None  # the broker's subscriber of dbconfig.activated.v1
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()

    def declare(self, broker: NatsBroker) -> None:
        """Follow ``dbconfig.activated.v1`` on ``broker`` (a plain subscriber, no queue group: every replica
        follows every activation; it starts with the broker)."""

        self._subscriber = on_event(
            broker,
            subjects.DBCONFIG_ACTIVATED,
            DbConfigActivated,
            self.on_event,
            title="guardrail-ingest active store",
        )

    async def start(self, nc: Client) -> None:
        """Learn the state (model-api, else the stream's last activation, else the default), then resync in the
        background. The subscriber starts with the broker, after this: so that no activation slips between the
        answer and the subscription, model-api is asked once more as soon as the subscriber runs."""
        self._nc = nc
        if not await self.ask_model_api():
            await self.read_last_activation()
        state = self.store.state
        if state.source == "default":
            log.warning(
                "no active database configuration known (model-api did not answer, no %s in stream %s): storing "
                "into the deployment default %s until one arrives",
                subjects.DBCONFIG_ACTIVATED,
                subjects.stream_for(subjects.DBCONFIG_ACTIVATED),
                state.db_type,
            )
        else:
            log.info("active store at start-up: %s (from %s)", state.db_type, state.source)
        self._task = asyncio.create_task(self._resync(), name="active-store-resync")

    async def stop(self) -> None:
        """Stop the resync (the subscriber stops with the broker)."""
        self._stop.set()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def ask_model_api(self) -> bool:
        """Request the active configuration; True when model-api answered (and its answer was offered)."""
        nc = self._nc
        if nc is None or not nc.is_connected:
            return False
        changes = self.store.changes
        try:
            msg = await nc.request(
                subjects.DBCONFIG_CMD_ACTIVE, b"{}", timeout=self.settings.request_timeout_s
            )
            reply = ActiveDbConfig.model_validate_json(msg.data)
        except ValidationError:
            log.warning(
                "model-api answered %s with an error: %s", subjects.DBCONFIG_CMD_ACTIVE, msg.data[:300]
            )
            return False
        except Exception as exc:  # no responders, timeout, NATS reconnecting
            log.debug("no answer on %s: %s: %s", subjects.DBCONFIG_CMD_ACTIVE, type(exc).__name__, exc)
            return False
        if reply.schema_version > SCHEMA_VERSION:
            log.warning("model-api answered with schema version %d; ignored", reply.schema_version)
            return False
        self.store.offer(from_reply(reply), authoritative=self.store.changes == changes)
        return True

    async def read_last_activation(self) -> bool:
        """Offer the last activation kept in JetStream (model-api away); True when there was one."""
        nc = self._nc
        if nc is None:
            return False
        stream = subjects.stream_for(subjects.DBCONFIG_ACTIVATED)
        try:
            raw = await nc.jetstream().get_last_msg(stream, subjects.DBCONFIG_ACTIVATED)
            event = DbConfigActivated.model_validate_json(raw.data or b"")
        except Exception as exc:  # no stream yet, no such message, not permitted, undecodable
            log.info(
                "no last %s in stream %s: %s: %s",
                subjects.DBCONFIG_ACTIVATED,
                stream,
                type(exc).__name__,
                exc,
            )
            return False
        state = from_event(event, "stream")
        if state is None:
            return False
        self.store.offer(state)
        return True

    async def on_event(self, event: DbConfigActivated) -> None:
        """Apply one ``dbconfig.activated.v1`` (an older producer's, or a newer version's: ask model-api)."""
        state = from_event(event, "event")
        if state is None:  # an older producer: the event says "changed", model-api says to what
            await self.ask_model_api()
            return
        self.store.offer(state)

    async def _catch_up(self) -> None:
        """Once the subscriber runs, ask model-api again (an activation between the start-up answer and the
        subscription was not heard)."""
        # FastStream signals no "subscriber started": the lifespan starts it right after the start-up hook
        while self._subscriber is not None and not self._subscriber.running and not self._stop.is_set():  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        if self._subscriber is not None and not self._stop.is_set():
            await self.ask_model_api()

    async def _resync(self) -> None:
        try:
            await self._catch_up()
        except Exception as exc:  # the periodic resync repairs it
            log.warning("active store catch-up failed: %s: %s", type(exc).__name__, exc)
        while not self._stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), timeout=self.settings.resync_s)
            if self._stop.is_set():
                return
            try:
                if not await self.ask_model_api() and self.store.state.source == "default":
                    await self.read_last_activation()
            except Exception as exc:  # never let the loop die
                log.warning("active store resync failed: %s: %s", type(exc).__name__, exc)
