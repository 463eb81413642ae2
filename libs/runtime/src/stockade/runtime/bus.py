"""The service's bus: one FastStream ``NatsBroker`` that owns the NATS connection.

Every service built with :func:`stockade.runtime.app.create_service_app` gets one broker. Its bus handlers are
FastStream subscribers declared on it (``state.broker.subscriber(...)``) in the service's ``on_startup`` hook;
the lifespan starts them when the hook returns and stops them (in-flight handlers finish, then the connection
drains) on shutdown. Code that needs the plain nats-py client (JetStream pull consumers, the outbox relay, a
KV bucket) uses the broker's own connection, ``state.nats``: one connection per process, one owner.

One way to handle a message: a request/reply handler is a plain function from a ``stockade.contracts`` request
model to its reply model, or to an ``ErrorReply`` for a domain error (the rule, with no transport), declared
with :func:`command`; an event handler is a function of the typed event, declared with :func:`on_event`. The subscribers here take the raw body (:func:`raw_body` as
their decoder), so a malformed request gets an ``ErrorReply`` instead of no answer, and replies are
byte-for-byte what ``libs/contracts/asyncapi.json`` documents.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from faststream.message import StreamMessage
from faststream.nats import NatsBroker, NatsUserPassword
from faststream.nats.subscriber.usecases import CoreSubscriber
from nats.aio.client import Client as NatsClient
from pydantic import BaseModel, ValidationError

from stockade.contracts.replies import ErrorReply, HealthReply
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


Q = TypeVar("Q", bound=BaseModel)
R = TypeVar("R", bound=BaseModel)
E = TypeVar("E", bound=BaseModel)


class NoRequest(BaseModel):
    """The request of a command whose body is not read (its contract says "send {}")."""

    @classmethod
    def model_validate_json(cls, *_: Any, **__: Any) -> NoRequest:
        return cls()


@runtime_checkable
class _OwnEncoding(Protocol):
    def to_bytes(self) -> bytes: ...


def encode(reply: BaseModel) -> bytes:
    """A reply's body: the contract model's own ``to_bytes()`` where it has one (aliases, unset fields left out),
    else its JSON."""
    return reply.to_bytes() if isinstance(reply, _OwnEncoding) else reply.model_dump_json().encode()


def problems(exc: ValidationError) -> str:
    """What is wrong with a request, one line: ``field: message; ...``."""
    return "; ".join(
        f"{'.'.join(map(str, e['loc'])) or 'request'}: {e['msg']}" for e in exc.errors(include_url=False)
    )


def _invalid(exc: ValidationError) -> str:
    return f"invalid request ({problems(exc)})"


@dataclass(frozen=True)
class Command(Generic[Q, R]):
    """A request/reply subject answered by ``handle``: a plain function from the request model to the reply
    model, or to an ``ErrorReply`` for a domain error (``not_found``, ...).

    The body is parsed with ``request`` (an empty body reads as ``{}``); one that does not validate is answered
    ``ErrorReply("invalid_request", invalid(error))`` without calling ``handle``. Anything ``handle`` raises is
    logged and answered ``ErrorReply("unavailable", unavailable)``: the asker gets an answer rather than a
    timeout, and fails closed or retries. :meth:`respond` is the whole conversation without a broker."""

    subject: str
    request: type[Q]
    handle: Callable[[Q], Awaitable[R | ErrorReply]]
    unavailable: str
    invalid: Callable[[ValidationError], str] = _invalid

    async def answer(self, body: bytes) -> R | ErrorReply:
        """The typed reply to ``body``; never raises."""
        try:
            query = self.request.model_validate_json(body or b"{}")
        except ValidationError as exc:
            return ErrorReply.of("invalid_request", self.invalid(exc))
        try:
            return await self.handle(query)
        except (
            Exception
        ) as exc:  # the database or store is down: answer instead of letting the asker time out
            log.warning("%s failed: %s: %s", self.subject, type(exc).__name__, exc)
            return ErrorReply.of("unavailable", self.unavailable)

    async def respond(self, body: bytes) -> bytes:
        """The reply body to send for ``body``; never raises."""
        return encode(await self.answer(body))

    def declare(self, broker: NatsBroker, *, queue: str | None, title: str) -> CoreSubscriber:
        """Answer the subject on ``broker`` (started with it). ``queue``: the queue group replicas share the
        requests in; None when every replica answers (a reload)."""
        subscriber = broker.subscriber(self.subject, queue=queue or "", decoder=raw_body, title=title)

        @subscriber
        async def on_request(body: bytes) -> bytes:
            return await self.respond(body)

        return subscriber


def command(
    broker: NatsBroker,
    subject: str,
    request: type[Q],
    handle: Callable[[Q], Awaitable[R | ErrorReply]],
    *,
    queue: str | None,
    title: str,
    unavailable: str,
    invalid: Callable[[ValidationError], str] = _invalid,
) -> CoreSubscriber:
    """Answer ``subject`` on ``broker`` with ``handle`` (:class:`Command` says how requests and errors are
    answered)."""
    return Command(subject, request, handle, unavailable, invalid).declare(broker, queue=queue, title=title)


def on_event(
    broker: NatsBroker,
    subject: str,
    event: type[E],
    handle: Callable[[E], Awaitable[None]],
    *,
    title: str,
) -> CoreSubscriber:
    """Follow ``subject`` on ``broker`` with ``handle`` (a plain subscriber, no queue group: every replica gets
    every event; it never answers, see :func:`event_subscriber`). A body that is not a valid ``event`` is logged
    and dropped; what ``handle`` raises is logged by the broker."""
    subscriber = event_subscriber(broker, subject, title=title)

    @subscriber
    async def on_message(body: bytes) -> None:
        try:
            parsed = event.model_validate_json(body)
        except ValidationError as exc:
            log.warning("ignored a malformed %s: %s", subject, problems(exc)[:300])
            return
        await handle(parsed)

    return subscriber


def declare_health(
    broker: NatsBroker, subject: str, service: str, probe: Callable[[], dict[str, Any]] | None = None
) -> None:
    """Answer ``subject`` with a ``HealthReply`` (queue group per service; ``probe``: fields to add)."""

    async def health(_: NoRequest) -> HealthReply:
        extra = probe() if probe is not None else {}
        return HealthReply.model_validate({"status": "ok", "service": service, **extra})

    command(
        broker,
        subject,
        NoRequest,
        health,
        queue=f"{service}-health",
        title=f"{service} health",
        unavailable=f"{service} cannot say how it is",
    )
