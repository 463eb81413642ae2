"""The service's bus: one FastStream ``NatsBroker`` that owns the NATS connection.

Every service built with :func:`stockade.runtime.app.create_service_app` gets one broker. Its bus handlers are
FastStream subscribers declared on it (``state.broker.subscriber(...)``) in the service's ``on_startup`` hook;
the lifespan starts them when the hook returns and stops them (in-flight handlers finish, then the connection
drains) on shutdown. Code that needs the plain nats-py client (JetStream pull consumers, the outbox relay, a
KV bucket) uses the broker's own connection, ``state.nats``: one connection per process, one owner.

Request/reply handlers here take the raw body (:func:`raw_body` as the subscriber's decoder) and return bytes:
each service validates requests with the ``stockade.contracts`` models itself, so a malformed request gets an
``ErrorReply`` instead of no answer, and replies are byte-for-byte what ``libs/contracts/asyncapi.json``
documents.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from faststream.message import StreamMessage
from faststream.nats import NatsBroker, NatsUserPassword
from faststream.nats.subscriber.usecases import CoreSubscriber
from nats.aio.client import Client as NatsClient

from stockade.runtime.nats import connect_with_retries, logged_error
from stockade.runtime.settings import NatsSettings
from stockade.runtime.shutdown import GRACE_S, finish_within

log = logging.getLogger(__name__)
# FastStream logs every message it handles: at DEBUG here; a handler's exception is still logged as an error
BUS_LOG = logging.getLogger("stockade.bus")


def make_broker(settings: NatsSettings, *, name: str, **overrides: Any) -> NatsBroker:
    """A broker for ``settings`` (not connected): reconnects forever once connected, credentials from settings.

    ``overrides``: other ``NatsBroker`` options (trust-broker turns off FastDepends and per-message logging)."""
    security = None
    options: dict[str, Any] = {
        "logger": BUS_LOG,
        "log_level": logging.DEBUG,
        "graceful_timeout": settings.drain_timeout_s,
        # seconds, handed to nats-py as they are (fractions work; FastStream's signature says int)
        "connect_timeout": settings.connect_timeout_s,
        "reconnect_time_wait": 0.5,
        "inbox_prefix": settings.reply_prefix(),  # replies to this service only (N13)
    }
    if settings.user:
        password = settings.password.get_secret_value() if settings.password else ""
        security = NatsUserPassword(username=settings.user, password=password)
    if settings.creds_file:
        options["user_credentials"] = str(settings.creds_file)
    return NatsBroker(
        settings.servers(),
        name=name,
        security=security,
        allow_reconnect=True,
        max_reconnect_attempts=-1,
        error_cb=logged_error,
        **(options | overrides),
    )


async def connect_broker(
    broker: NatsBroker,
    settings: NatsSettings,
    *,
    wait_s: float | None = None,
    until: asyncio.Event | None = None,
) -> NatsClient:
    """Connect ``broker``, retrying for ``wait_s`` (default ``settings.startup_wait_s``) or until ``until`` is
    set; its nats-py client."""
    await connect_with_retries(settings, broker.connect, wait_s=wait_s, until=until)
    return broker.connection


async def stop_broker(broker: NatsBroker, timeout_s: float) -> None:
    """Stop the subscribers (in-flight handlers finish) and drain the connection. Past ``timeout_s``, or if that
    failed, the stop is cancelled and the connection closed, within a second (:mod:`stockade.runtime.shutdown`)."""
    connection = broker._connection  # None when the broker never connected
    await finish_within(broker.stop(), "NATS drain", timeout_s, service="bus")
    if connection is not None and not connection.is_closed:
        await finish_within(connection.close(), "NATS close", GRACE_S, service="bus")


async def raw_body(message: StreamMessage[Any]) -> bytes:
    """A subscriber decoder that hands the handler the message body as sent (no JSON guessing)."""
    return bytes(message.body)


def event_subscriber(broker: NatsBroker, subject: str, *, title: str | None = None) -> CoreSubscriber:
    """A subscriber for events, not requests: its handler gets the raw body and its return is never sent.

    FastStream answers every message that carries a reply subject with what the handler returned (an empty
    body for None). An event published with JetStream (the outbox relay's ``js.publish``) is such a message: its
    reply subject waits for the stream's acknowledgement, and an empty answer from a subscriber that got there
    first reads as a failed publish. ``no_reply=True`` keeps event handlers out of that conversation."""
    return broker.subscriber(subject, decoder=raw_body, no_reply=True, title=title)


def declare_health(
    broker: NatsBroker, subject: str, service: str, probe: Callable[[], dict[str, Any]] | None = None
) -> None:
    """Answer ``subject`` with a ``HealthReply`` (queue group per service), like
    :func:`stockade.runtime.nats.serve_health` on a broker."""
    from stockade.contracts.replies import HealthReply

    @broker.subscriber(subject, queue=f"{service}-health", decoder=raw_body, title=f"{service} health")
    async def health(_: bytes) -> bytes:
        extra = probe() if probe is not None else {}
        return HealthReply.model_validate({"status": "ok", "service": service, **extra}).to_bytes()
