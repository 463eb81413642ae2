"""The ``python -m stockade.<service>`` of a service: settings from the environment, logging configured once,
then serve. :func:`run_service` for an HTTP service (``create_app`` returns a FastAPI app), :func:`run_worker`
for a headless one (``create_app`` returns something with ``start`` and ``stop``, like the trust-broker)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, Protocol, TypeVar

from fastapi import FastAPI

from stockade.runtime.http import serve
from stockade.runtime.logging import configure_logging
from stockade.runtime.metrics import MetricsServer
from stockade.runtime.nats import install_stop_signals
from stockade.runtime.settings import ServiceSettings

S = TypeVar("S", bound=ServiceSettings)


class Worker(Protocol):
    """A headless service: ``start`` returns once it serves, ``stop`` ends it within its shutdown deadline."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


W = TypeVar("W", bound=Worker)


def _configured(settings_type: Callable[[], S]) -> S:
    settings = settings_type()
    configure_logging(settings.service_name, settings.log.level, settings.log.json_format)
    return settings


def run_service(settings_type: Callable[[], S], create_app: Callable[[S], FastAPI]) -> None:
    """Blocking: read the settings, configure logging from them, serve ``create_app(settings)`` until stopped."""
    settings = _configured(settings_type)
    serve(create_app(settings), settings)


def run_worker(settings_type: Callable[[], S], create_app: Callable[[S], W]) -> None:
    """Blocking: read the settings, configure logging from them, then run ``create_app(settings)`` until SIGTERM
    or SIGINT, beside a ``/metrics`` and ``/healthz`` listener on ``http`` (keep that port private). On uvloop
    where it exists: a worker's nats-py hot path (parse, publish, futures) is event-loop bound."""
    settings = _configured(settings_type)
    _run(serve_worker(settings, create_app))


async def serve_worker(settings: S, create_app: Callable[[S], W]) -> None:
    """Start the worker, wait for a stop signal, stop it; the metrics listener around both."""
    app = create_app(settings)
    stop = asyncio.Event()
    install_stop_signals(stop)
    metrics = MetricsServer(settings.http.host, settings.http.port, settings.service_name)
    await metrics.start()
    try:
        await app.start()
        try:
            await stop.wait()
        finally:
            await app.stop()
    finally:
        await metrics.stop()


def _run(main: Coroutine[Any, Any, None]) -> None:
    try:
        import uvloop
    except ImportError:  # Windows, or a service that does not install it
        asyncio.run(main)
    else:
        uvloop.run(main)
