"""A bounded, per-client budget of failed ingest-key authentications (README, "Ingest keys").

Each client (its address as the app sees it: the TCP peer, or the X-Forwarded-For address uvicorn takes from a
proxy in ``http.forwarded_allow_ips`` when ``http.proxy_headers`` is on; IPv6 clients by their /64, which one
host usually holds whole) has a token bucket of ``burst`` failures that refills at ``burst / window_s`` per
second. An authentication that is not answered from the positive cache takes a token *before* it is checked
(so concurrent attempts cannot overdraw the budget while their questions are on the bus) and gives it back
when the key turns out valid or could not be checked; a client with no token left is answered 429 with
Retry-After. At most ``max_clients`` buckets are kept (a full bucket is not kept at all): refilled ones go
first, then the least recently touched, so the table's memory is bounded whatever addresses a flood comes from.
"""

from __future__ import annotations

import ipaddress
import math
import time

_IPV6_PREFIX = 64


def client_key(host: str | None) -> str:
    """The bucket a client address counts against: the address itself, an IPv6 address's /64 network."""
    if not host:
        return "unknown"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host[:64]
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, _IPV6_PREFIX), strict=False))
    return str(address)


class FailureLimiter:
    """Token buckets of failed authentications per client; every method is synchronous (one event loop)."""

    def __init__(self, burst: int, window_s: float, max_clients: int) -> None:
        self.burst = burst
        self.rate = burst / window_s  # tokens regained per second
        self.max_clients = max_clients
        self._buckets: dict[str, tuple[float, float]] = {}  # client -> (tokens, when they were counted)

    def _tokens(self, client: str, now: float) -> float:
        tokens, then = self._buckets.get(client, (float(self.burst), now))
        return min(float(self.burst), tokens + (now - then) * self.rate)

    def take(self, client: str) -> float:
        """Reserve one failure for ``client``: 0.0 when taken, else the seconds until one is free again."""
        now = time.monotonic()
        tokens = self._tokens(client, now)
        if tokens < 1.0:
            self._buckets[client] = (tokens, now)
            return (1.0 - tokens) / self.rate
        if self._buckets.pop(client, None) is None and len(self._buckets) >= self.max_clients:
            self._prune(now)
        self._buckets[client] = (tokens - 1.0, now)  # (re)inserted last: the table is oldest-touched first
        return 0.0

    def give_back(self, client: str) -> None:
        """Return a reserved token (the key was valid, or could not be checked: no failure)."""
        entry = self._buckets.get(client)
        if entry is None:
            return
        now = time.monotonic()
        tokens = min(float(self.burst), self._tokens(client, now) + 1.0)
        if tokens >= self.burst:
            del self._buckets[client]  # a full bucket is the default: keep the table small
        else:
            self._buckets[client] = (tokens, now)

    def retry_after_s(self, wait_s: float) -> int:
        """Whole seconds for a Retry-After header (at least 1)."""
        return max(1, math.ceil(wait_s))

    def _prune(self, now: float) -> None:
        full = [
            c
            for c, (tokens, then) in self._buckets.items()
            if tokens + (now - then) * self.rate >= self.burst
        ]
        for client in full:
            del self._buckets[client]
        excess = len(self._buckets) - self.max_clients + 1
        if excess > 0:  # still full of clients that failed recently: forget the oldest (insertion order)
            for client in list(self._buckets)[:excess]:
                del self._buckets[client]

    def __len__(self) -> int:
        return len(self._buckets)
