"""Free TCP ports and readiness polling for servers the harness starts."""

from __future__ import annotations

import random
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["ephemeral_range", "free_port", "port_open", "wait_until"]


# Ports below the kernel's ephemeral range: a port from bind(0) is an ephemeral one, and between the moment it is
# handed out and the moment a server binds it, the kernel may give the same number to any outgoing connection as
# its source port (a cluster's routes dialling nodes not yet up did, and the server failed with "address already
# in use"). Outside the range the kernel never picks it by itself.
_LOWEST = 10_000
_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_handed: set[int] = set()
_lock = threading.Lock()
_random = random.SystemRandom()


def ephemeral_range() -> tuple[int, int] | None:
    """The kernel's ephemeral port range (Linux), or None where it cannot be read."""
    try:
        low, high = (int(x) for x in _RANGE_FILE.read_text().split())
    except (OSError, ValueError):
        return None
    return low, high


def _bindable(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free right now on ``host``: below the kernel's ephemeral range where it is known (so no
    outgoing connection takes it before the server binds it), never one this process was handed before; else the
    kernel's choice (bind to port 0)."""
    known = ephemeral_range()
    if known is not None and known[0] - _LOWEST >= 1_000:
        with _lock:
            for _ in range(200):
                port = _random.randrange(_LOWEST, known[0])
                if port not in _handed and _bindable(host, port):
                    _handed.add(port)
                    return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        chosen: int = sock.getsockname()[1]
        return chosen


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
