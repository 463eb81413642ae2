"""The NATS rate-limit backend fails closed within its timeout when NATS is unreachable, with its default settings.

Before: nothing listening made a check wait about 30 s (nats-py's first connect looping over 60 attempts), a
server killed mid-run made every check wait 5 s (a JetStream request timeout while the client reconnected), and a
client that had given up reconnecting failed every later check even after NATS was back.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Awaitable, Iterator
from pathlib import Path
from typing import Any

import pytest

from stockade.guardrails import CheckUnavailableError
from stockade.guardrails.policies import NatsBackendConfig, RateLimiter, RateLimitsConfig
from stockade.testing.nats import find_nats_server, read_server_info
from stockade.testing.ports import free_port, wait_until
from stockade.testing.processes import ManagedProcess

pytestmark = pytest.mark.nats

BOUND_S = NatsBackendConfig().timeout_seconds + 1.0  # the check's timeout, plus slack for a busy machine


class Server:
    """A nats-server on a fixed port and store, so it can be killed and started again where it was."""

    def __init__(self) -> None:
        binary = find_nats_server()
        assert binary is not None
        self.port = free_port()
        self.store = Path(tempfile.mkdtemp(prefix="stockade-nats-"))
        self.argv = [str(binary), "-a", "127.0.0.1", "-p", str(self.port), "-js", "-sd", str(self.store)]
        self.process: ManagedProcess | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.process = ManagedProcess(self.argv, log_path=self.store / "server.log", die_with_parent=True)
        ready = lambda: read_server_info("127.0.0.1", self.port, 0.5) is not None  # noqa: E731
        assert wait_until(ready, timeout=20, interval=0.05)

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
            self.process = None


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server()
    s.start()
    yield s
    s.stop()


def limiter(url: str, **nats: Any) -> RateLimiter:
    return RateLimiter(
        RateLimitsConfig(requests_per_session=1000, backend="nats", nats=NatsBackendConfig(url=url, **nats))
    )


async def fails_closed_in_time(check: Awaitable[Any]) -> str:
    """The check raises CheckUnavailableError before BOUND_S (a TimeoutError here means it took longer)."""
    with pytest.raises(CheckUnavailableError) as info:
        await asyncio.wait_for(check, timeout=BOUND_S)
    return str(info.value)


async def test_nothing_listening_fails_closed_within_the_timeout() -> None:
    rate = limiter(f"nats://127.0.0.1:{free_port()}")
    try:
        for _ in range(2):  # and again on the next check: no state left behind
            assert "unavailable" in await fails_closed_in_time(rate.before_request("s-1"))
    finally:
        await rate.close()


@pytest.mark.parametrize("attempts", [60, 1], ids=["reconnecting", "gave-up"])
async def test_server_killed_mid_run_fails_closed_then_recovers(server: Server, attempts: int) -> None:
    rate = limiter(server.url, max_reconnect_attempts=attempts, reconnect_wait_seconds=0.2)
    try:
        assert (await rate.before_request("s-1")).passed
        await asyncio.to_thread(server.stop)
        for _ in range(3):
            await fails_closed_in_time(rate.before_request("s-1"))
            await fails_closed_in_time(rate.usage("s-1"))
        await asyncio.sleep(0.5)  # with one attempt, the client gives up meanwhile
        await asyncio.to_thread(server.start)  # same port, same store: the bucket is still there

        async def works() -> bool:
            try:
                return (await rate.before_request("s-1")).passed
            except CheckUnavailableError:
                await asyncio.sleep(0.1)
                return False

        deadline = asyncio.get_running_loop().time() + 20
        while not await works():
            assert asyncio.get_running_loop().time() < deadline, "the store never recovered"
        assert (await rate.usage("s-1"))["requests"] >= 2  # the count survived, and went on
    finally:
        await rate.close()
