"""Run an ASGI app with uvicorn and stop it gracefully on SIGTERM/SIGINT (in-flight requests finish), in bounded time.

The stop has three bounds, each covering what the one before cannot:

1. uvicorn drains open connections for at most ``GRACEFUL_S``; then the app's lifespan stops the service within
   ``settings.shutdown_timeout_s`` (:class:`stockade.runtime.shutdown.ShutdownDeadline`: each step cancelled and
   abandoned past it).
2. Tasks still alive after that (when the stop did not come from a signal: uvicorn re-raises a caught signal once
   the lifespan has stopped) are cancelled, repeatedly, for a second; if one still runs, the process exits with
   status 70 rather than let ``asyncio``'s runner wait for it without a bound.
3. A watchdog thread, armed by the stop signal, ends the process if all that has not happened
   ``GRACEFUL_S + shutdown_timeout_s + WATCHDOG_MARGIN_S`` later (an event loop blocked in a synchronous call
   cannot run the first two): it writes every thread's stack to stderr and exits with status 70.
"""

from __future__ import annotations

import asyncio
import faulthandler
import logging
import os
import sys
import threading
from types import FrameType

import uvicorn
from fastapi import FastAPI

from stockade.runtime.settings import ServiceSettings
from stockade.runtime.shutdown import GRACE_S, cancel_leftovers

log = logging.getLogger(__name__)

GRACEFUL_S = 10.0
WATCHDOG_MARGIN_S = 10.0
WATCHDOG_EXIT_STATUS = 70  # EX_SOFTWARE: the process did not stop by itself


class _BoundedServer(uvicorn.Server):
    """uvicorn's server with a stop watchdog armed by the first stop signal."""

    def __init__(self, config: uvicorn.Config, watchdog_s: float) -> None:
        super().__init__(config)
        self._watchdog_s = watchdog_s
        self._watchdog: threading.Timer | None = None

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self._watchdog is None:
            self._watchdog = arm_stop_watchdog(self._watchdog_s)
        super().handle_exit(sig, frame)

    def disarm(self) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()


def arm_stop_watchdog(after_s: float) -> threading.Timer:
    """A daemon timer that dumps every thread's stack and ends the process if it is still running ``after_s``
    from now (cancel it once the process has stopped by itself)."""

    def expire() -> None:
        sys.stderr.write(
            f"stockade: the process did not stop within {after_s:.0f} s of the stop signal; "
            "every thread's stack follows, then it exits\n"
        )
        faulthandler.dump_traceback(all_threads=True)
        sys.stderr.flush()
        os._exit(WATCHDOG_EXIT_STATUS)

    timer = threading.Timer(after_s, expire)
    timer.daemon = True
    timer.name = "stop-watchdog"
    timer.start()
    return timer


def serve(app: FastAPI, settings: ServiceSettings) -> None:
    """Blocking: serve until a stop signal; uvicorn drains connections, then the app's lifespan closes NATS/DB.

    With ``http.proxy_headers`` uvicorn trusts X-Forwarded-Proto/-For from ``http.forwarded_allow_ips`` only, so
    the app sees the client's scheme (https: Secure cookies, HSTS) and address (rate limits)."""
    config = uvicorn.Config(
        app,
        host=settings.http.host,
        port=settings.http.port,
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=int(GRACEFUL_S),
        proxy_headers=settings.http.proxy_headers,
        forwarded_allow_ips=settings.http.forwarded_allow_ips,
    )
    server = _BoundedServer(config, GRACEFUL_S + settings.shutdown_timeout_s + WATCHDOG_MARGIN_S)

    stuck: list[str] = []

    async def run() -> None:
        try:
            await server.serve()
        finally:
            stuck.extend(await cancel_leftovers(GRACE_S, service=settings.service_name))

    try:
        with asyncio.Runner(loop_factory=config.get_loop_factory()) as runner:
            runner.run(run())
            if stuck:  # closing the runner would wait for them without a bound: they are named in the log
                logging.shutdown()
                os._exit(WATCHDOG_EXIT_STATUS)
    finally:
        server.disarm()
