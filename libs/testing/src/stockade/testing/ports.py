"""Free TCP ports and readiness polling for servers the harness starts."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

__all__ = ["free_port", "port_open", "wait_until"]


def free_port(host: str = "127.0.0.1") -> int:
    """Ask the kernel for a TCP port that is free right now on ``host``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    """True when something accepts TCP connections on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def wait_until(
    check: Callable[[], bool],
    *,
    timeout: float,
    interval: float = 0.05,
    alive: Callable[[], bool] | None = None,
) -> bool:
    """Poll ``check`` until it returns True (-> True) or ``timeout`` seconds pass (-> False).

    ``alive`` lets the caller stop early when the process being waited for has already died.
    """
    deadline = time.monotonic() + timeout
    while True:
        if check():
            return True
        if alive is not None and not alive():
            return False
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)
