"""NATS connection: connect with retries at startup, drain gracefully on shutdown, answer health requests."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit

import nats
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg

from stockade.runtime.settings import NatsSettings, reply_prefix_of
from stockade.runtime.shutdown import GRACE_S, finish_within

log = logging.getLogger(__name__)
T = TypeVar("T")


class NatsUnavailableError(RuntimeError):
    """NATS could not be reached within the startup budget."""


async def connect_nats(settings: NatsSettings, *, name: str = "stockade") -> NatsClient:
    """Connect, retrying until ``settings.startup_wait_s`` runs out; then keep reconnecting forever."""
    options: dict[str, Any] = {
        "servers": settings.servers(),
        "name": name,
        "connect_timeout": settings.connect_timeout_s,
        "allow_reconnect": True,
        "max_reconnect_attempts": -1,
        "reconnect_time_wait": 0.5,
        "error_cb": logged_error,
        "inbox_prefix": settings.reply_prefix(),  # replies to this user only (N13)
    }
    if settings.user:
        options["user"] = settings.user
        options["password"] = settings.password.get_secret_value() if settings.password else None
    if settings.creds_file:
        options["user_credentials"] = str(settings.creds_file)
    return await connect_with_retries(settings, lambda: nats.connect(**options))


async def connect_with_retries(
    settings: NatsSettings,
    connect: Callable[[], Awaitable[T]],
    *,
    wait_s: float | None = None,
    until: asyncio.Event | None = None,
) -> T:
    """Run ``connect`` until it succeeds or ``wait_s`` (default ``settings.startup_wait_s``) runs out, or ``until``
    is set (then it raises ``CancelledError``).

    nats-py's first connect can loop far beyond its timeout when nothing listens (nats-io/nats.py#645), so each
    attempt is preceded by a TCP check of the servers and bounded by ``asyncio.wait_for``. nats-py also swallows
    ``CancelledError`` in places (its flush and drain), so a cancellation alone can be lost and an endless retry
    loop (``wait_s=math.inf``) must be stopped through ``until``."""
    deadline = time.monotonic() + (settings.startup_wait_s if wait_s is None else wait_s)
    attempt = 0
    while True:
        if until is not None and until.is_set():
            raise asyncio.CancelledError("stopping: no more NATS connection attempts")
        attempt += 1
        try:
            for server in settings.servers():
                with contextlib.suppress(ConnectionError):
                    await tcp_reachable(server, settings.connect_timeout_s)
                    break
            else:
                raise ConnectionError("no NATS server answers")
            return await asyncio.wait_for(connect(), timeout=settings.connect_timeout_s * 3)
        except Exception as exc:
            if time.monotonic() >= deadline:
                raise NatsUnavailableError(
                    f"cannot reach NATS at {', '.join(settings.servers())} after {attempt} attempts ({exc}); "
                    "start it (stockade up starts one) or set the service's NATS__URL"
                ) from exc
            await asyncio.sleep(min(0.2 * attempt, 1.0))


async def _quiet_error(exc: Exception) -> None:
    log.debug("NATS client error: %s", exc)


async def logged_error(exc: Exception) -> None:
    log.warning("NATS client error: %s: %s", type(exc).__name__, exc)


async def tcp_reachable(url: str, timeout_s: float) -> None:
    """Raise ConnectionError fast when nothing listens at ``url`` (nats-py may retry for minutes otherwise)."""
    parsed = urlsplit(url if "://" in url else f"nats://{url}")
    host, port = parsed.hostname or "127.0.0.1", parsed.port or 4222
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout=timeout_s)
    except (OSError, TimeoutError) as exc:
        raise ConnectionError(f"nothing answers at {host}:{port} ({type(exc).__name__})") from exc
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()


async def probe_connect(url: str, *, timeout_s: float = 1.0, **options: Any) -> NatsClient:
    """One bounded connection attempt with no retries and no traceback noise (probes, health checks).

    nats-py's initial connect can loop far beyond ``connect_timeout`` (nats-io/nats.py#645), so the attempt is
    preceded by a TCP check and bounded by ``asyncio.wait_for``. With a ``user`` its requests' replies come on
    that user's own inbox prefix (``_INBOX_<user>``), the only one deploy/nats lets it read.
    """
    if options.get("user") and "inbox_prefix" not in options:
        options["inbox_prefix"] = reply_prefix_of(str(options["user"]))
    await tcp_reachable(url, timeout_s)
    return await asyncio.wait_for(
        nats.connect(
            url,
            connect_timeout=timeout_s,
            allow_reconnect=False,
            max_reconnect_attempts=0,
            error_cb=_quiet_error,
            **options,
        ),
        timeout=timeout_s * 3,
    )


async def drain(nc: NatsClient, timeout_s: float = 10.0) -> None:
    """Finish in-flight messages and close; never longer than ``timeout_s`` plus a second to close."""
    if nc.is_closed:
        return
    await finish_within(nc.drain(), "NATS drain", timeout_s, service=nc.options.get("name") or "nats")
    if not nc.is_closed:
        await finish_within(nc.close(), "NATS close", GRACE_S, service=nc.options.get("name") or "nats")


class LazyNatsConnection:
    """A connection opened on first use, for a component that must not wait for NATS at startup (an outbox relay).

    Each call returns the open client, or makes one connection attempt (no startup wait) and raises
    :class:`NatsUnavailableError` if NATS does not answer; the next call tries again. With ``health_subject`` the
    new connection also answers health requests (:func:`serve_health`). ``close()`` drains it.
    """

    def __init__(self, settings: NatsSettings, *, name: str, health_subject: str | None = None) -> None:
        self._settings = settings.model_copy(update={"startup_wait_s": 0.0})
        self._name = name
        self._health_subject = health_subject
        self.nc: NatsClient | None = None

    async def __call__(self) -> NatsClient:
        if self.nc is None or self.nc.is_closed:
            nc = await connect_nats(self._settings, name=self._name)
            if self._health_subject is not None:
                try:
                    await serve_health(nc, self._health_subject, self._name)
                except Exception:
                    await nc.close()
                    raise
            self.nc = nc
        return self.nc

    async def close(self) -> None:
        if self.nc is not None:
            await drain(self.nc, self._settings.drain_timeout_s)


async def serve_health(
    nc: NatsClient, subject: str, service: str, probe: Callable[[], dict[str, Any]] | None = None
) -> Any:
    """Answer ``subject`` requests with ``{"status": "ok", "service": ...}`` (``stockade.contracts.replies.
    HealthReply``; queue group per service)."""
    from stockade.contracts.replies import HealthReply  # here: the container probe imports this module

    async def handler(msg: Msg) -> None:
        extra = probe() if probe is not None else {}
        body = HealthReply.model_validate({"status": "ok", "service": service, **extra})
        await msg.respond(body.to_bytes())

    return await nc.subscribe(subject, queue=f"{service}-health", cb=handler)


def install_stop_signals(stop: asyncio.Event) -> None:
    """SIGTERM and SIGINT set ``stop`` so the caller can drain and exit cleanly."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):  # non-main thread or Windows
            loop.add_signal_handler(sig, stop.set)
