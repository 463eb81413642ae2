"""Benchmark: GET /prompts/active-prompt-version against a trivial endpoint of the same app (not a test).

    .venv/bin/python bench/prompt_read.py [--pg-url postgresql://postgres@127.0.0.1:5432/postgres]
                                          [--db postgres|sqlite|both] [--duration 20] [--concurrency 32]
                                          [--rounds 2] [--warmup 3] [--open-duration 20] [--open-connections 64]

PostgreSQL: ``--pg-url`` (default ``POSTGRES_URL``, else 127.0.0.1:5432); if nothing answers there, a throwaway
cluster is started from the Debian binaries (as ``stockade.testing`` does) and removed afterwards.

Creates a throwaway database, migrates and seeds it, serves prompt-api exactly as in production with
``python -m stockade.prompt_api`` (one uvicorn process, uvloop + httptools, access log off, log level WARNING)
on a free loopback port, publishes one prompt, then measures both endpoints the same way: a load generator in
its own process (so the client's CPU is not the server's) opens ``--concurrency`` keep-alive HTTP/1.1
connections and keeps one request in flight on each. Each endpoint gets a ``--warmup`` (not measured), then
``--duration`` seconds in total, split into ``--rounds`` alternating slices (trivial, read, trivial, read, ...)
so that a change in machine load during the run hits both endpoints alike. The trivial endpoint is the same
app's ``/healthz`` (no I/O). Prints requests/s, p50/p99 latency, the server process's CPU use and the machine's
load average, and the throughput ratio (issue 3's goal: >= 0.5).

Then the tail (issue 18), open loop: each endpoint is driven at a fixed arrival rate of half its own closed-loop
(saturation) throughput, over ``--open-connections`` keep-alive connections, for ``--open-duration`` seconds in
alternating slices. A request is due at its scheduled time whatever earlier answers did (no coordinated
omission): if every connection is busy it waits, and its latency counts from the scheduled time. Prints p50, p99
and p99/p50 per endpoint (goal: read p99 <= 3 x p50). ``--db both`` (default) measures PostgreSQL, then SQLite (a
file in a temporary directory), each with its own server process. Absolute figures depend on what else runs on
the machine; compare the ratios, and the load average printed with them.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from urllib.parse import urlencode, urlsplit, urlunsplit

_CONTENT_LENGTH = re.compile(rb"(?i)\r\ncontent-length:\s*(\d+)")


# ----------------------------------------------------------------------------------------------------------------
# The load generator (runs in its own process: ``prompt_read.py --client PORT TARGET SECONDS CONCURRENCY``)


class _KeepAliveClient(asyncio.Protocol):
    """One connection, one request in flight; the next request goes out as soon as the answer is complete."""

    def __init__(self, request: bytes, stop_at: float, latencies: list[int], statuses: dict[bytes, int]):
        self.request, self.stop_at = request, stop_at
        self.latencies, self.statuses = latencies, statuses
        self.buf = bytearray()
        self.started = 0.0
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's TCPTransport is not a subclass
        self._send()

    def _send(self) -> None:
        assert self.transport is not None
        self.started = time.perf_counter()
        self.transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        buf = self.buf
        buf += data
        end = buf.find(b"\r\n\r\n")
        if end < 0:
            return
        match = _CONTENT_LENGTH.search(buf, 0, end + 2)
        total = end + 4 + (int(match.group(1)) if match else 0)
        if len(buf) < total:
            return
        now = time.perf_counter()
        status = bytes(buf[9:12])
        del buf[:total]
        self.latencies.append(int((now - self.started) * 1e6))
        self.statuses[status] = self.statuses.get(status, 0) + 1
        if now < self.stop_at:
            self._send()
        elif self.transport is not None:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_result(None)


async def _load(port: int, target: str, seconds: float, concurrency: int) -> dict[str, object]:
    loop = asyncio.get_running_loop()
    request = f"GET {target} HTTP/1.1\r\nHost: bench\r\nConnection: keep-alive\r\n\r\n".encode()
    latencies: list[int] = []
    statuses: dict[bytes, int] = {}
    started = time.perf_counter()
    stop_at = started + seconds
    clients = []
    for _ in range(concurrency):
        _, proto = await loop.create_connection(
            lambda: _KeepAliveClient(request, stop_at, latencies, statuses), "127.0.0.1", port
        )
        clients.append(proto)
    await asyncio.gather(*(c.done for c in clients))
    elapsed = time.perf_counter() - started
    return {
        "elapsed": elapsed,
        "latencies_us": latencies,
        "statuses": {k.decode(): v for k, v in statuses.items()},
    }


class _OpenLoopConnection(asyncio.Protocol):
    """One keep-alive connection of the open-loop generator; latency counts from the request's scheduled time."""

    def __init__(self, gen: _OpenLoop):
        self.gen = gen
        self.buf = bytearray()
        self.intended = 0.0
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def send(self, intended: float) -> None:
        assert self.transport is not None
        self.intended = intended
        self.transport.write(self.gen.request)

    def data_received(self, data: bytes) -> None:
        buf = self.buf
        buf += data
        end = buf.find(b"\r\n\r\n")
        if end < 0:
            return
        match = _CONTENT_LENGTH.search(buf, 0, end + 2)
        total = end + 4 + (int(match.group(1)) if match else 0)
        if len(buf) < total:
            return
        status = bytes(buf[9:12])
        del buf[:total]
        self.gen.completed(self, status, time.perf_counter() - self.intended)


class _OpenLoop:
    """Requests at a fixed arrival rate whatever the answers do (no coordinated omission): a request due while
    every connection is busy waits in a queue, and that wait is part of its latency."""

    def __init__(self, request: bytes, total: int):
        self.request, self.total = request, total
        self.idle: list[_OpenLoopConnection] = []
        self.waiting: collections.deque[float] = collections.deque()
        self.latencies: list[int] = []
        self.statuses: dict[bytes, int] = {}
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def dispatch(self, intended: float) -> None:
        if self.idle:
            self.idle.pop().send(intended)
        else:
            self.waiting.append(intended)

    def completed(self, conn: _OpenLoopConnection, status: bytes, seconds: float) -> None:
        self.latencies.append(int(seconds * 1e6))
        self.statuses[status] = self.statuses.get(status, 0) + 1
        if self.waiting:
            conn.send(self.waiting.popleft())
        else:
            self.idle.append(conn)
        if len(self.latencies) == self.total and not self.done.done():
            self.done.set_result(None)


async def _open_loop(
    port: int, target: str, seconds: float, rate: float, connections: int
) -> dict[str, object]:
    loop = asyncio.get_running_loop()
    request = f"GET {target} HTTP/1.1\r\nHost: bench\r\nConnection: keep-alive\r\n\r\n".encode()
    total = max(1, int(seconds * rate))
    gen = _OpenLoop(request, total)
    conns = []
    for _ in range(connections):
        _, proto = await loop.create_connection(lambda: _OpenLoopConnection(gen), "127.0.0.1", port)
        conns.append(proto)
    gen.idle.extend(conns)
    started = time.perf_counter()
    sent = 0
    while sent < total:
        now = time.perf_counter()
        while sent < total and started + sent / rate <= now:
            gen.dispatch(started + sent / rate)
            sent += 1
        if sent < total:
            await asyncio.sleep(max(0.0, started + sent / rate - time.perf_counter()))
    await asyncio.wait_for(gen.done, timeout=seconds + 60)
    elapsed = time.perf_counter() - started
    for c in conns:
        if c.transport is not None:
            c.transport.close()
    return {
        "elapsed": elapsed,
        "latencies_us": gen.latencies,
        "statuses": {k.decode(): v for k, v in gen.statuses.items()},
    }


def client_main(argv: list[str]) -> int:
    port, target, seconds, concurrency = int(argv[0]), argv[1], float(argv[2]), int(argv[3])
    rate = float(argv[4]) if len(argv) > 4 else 0.0
    try:
        import uvloop

        uvloop.install()
    except ImportError:  # pragma: no cover - uvloop is a prompt-api dependency
        pass
    if rate > 0:
        result = asyncio.run(_open_loop(port, target, seconds, rate, concurrency))
    else:
        result = asyncio.run(_load(port, target, seconds, concurrency))
    json.dump(result, sys.stdout)
    return 0


# ----------------------------------------------------------------------------------------------------------------
# The driver


@dataclass
class Series:
    label: str
    target: str
    requests: int = 0
    seconds: float = 0.0
    server_cpu_s: float = 0.0
    latencies_us: list[int] = field(default_factory=list)

    def line(self) -> str:
        qs = statistics.quantiles(self.latencies_us, n=100)
        return (
            f"{self.label:<36} {self.requests / self.seconds:8.0f} req/s  p50 {qs[49] / 1000:6.2f} ms"
            f"  p99 {qs[98] / 1000:6.2f} ms  server CPU {100 * self.server_cpu_s / self.seconds:4.0f}%"
            f"  (n={self.requests})"
        )

    @property
    def rps(self) -> float:
        return self.requests / self.seconds

    @property
    def p99_ms(self) -> float:
        return statistics.quantiles(self.latencies_us, n=100)[98] / 1000

    @property
    def p50_ms(self) -> float:
        return statistics.quantiles(self.latencies_us, n=100)[49] / 1000

    @property
    def tail_ratio(self) -> float:
        return self.p99_ms / self.p50_ms


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def process_cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


async def run_client(
    port: int,
    series: Series | None,
    target: str,
    seconds: float,
    concurrency: int,
    pid: int,
    rate: float = 0.0,
):
    """Closed loop (``concurrency`` connections, one request in flight each), or open loop at ``rate`` req/s
    over ``concurrency`` connections."""
    cpu0 = process_cpu_seconds(pid)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        __file__,
        "--client",
        str(port),
        target,
        str(seconds),
        str(concurrency),
        str(rate),
        stdout=subprocess.PIPE,
    )
    out, _ = await proc.communicate()
    cpu = process_cpu_seconds(pid) - cpu0
    if proc.returncode != 0:
        raise RuntimeError(f"load generator failed on {target.split('?')[0]}")
    result = json.loads(out)
    bad = {k: v for k, v in result["statuses"].items() if k != "200"}
    if bad:
        raise RuntimeError(f"non-200 answers from {target.split('?')[0]}: {bad}")
    if series is not None:
        series.requests += len(result["latencies_us"])
        series.seconds += result["elapsed"]
        series.server_cpu_s += cpu
        series.latencies_us.extend(result["latencies_us"])


async def seed(url: str) -> tuple[str, str]:
    from stockade import identity
    from stockade.runtime.db import create_engine, session_factory

    engine = create_engine(url)
    try:
        sessions = session_factory(engine)
        async with sessions() as s:
            org = await identity.create_organisation(s, "bench")
            user = await identity.create_user(s, "bench@example.com")
            project = await identity.create_project(s, org.id, "bench")
            await identity.add_project_member(s, project.id, user.id)
            key = (await identity.create_api_key(s, user.id, scope="write")).key
            await s.commit()
        return project.id, key
    finally:
        await engine.dispose()


async def publish(port: int, key: str, project_id: str) -> None:
    import httpx

    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
        r = await client.post(
            "/prompts/active-prompt-version",
            headers={"X-API-Key": key},
            json={
                "project_id": project_id,
                "prompt_name": "bench",
                "content": "You are a helpful assistant. " * 20,
                "config": {"model": "m", "temperature": 0.2},
            },
        )
        r.raise_for_status()
        read = await client.get(
            "/prompts/active-prompt-version",
            params={"api_key": key, "project_id": project_id, "prompt_name": "bench"},
        )
        read.raise_for_status()
        assert read.json()["version"] == 1, read.text


async def postgres_admin_url(requested: str):  # type: ignore[no-untyped-def]
    """(admin URL, cluster to stop or None): the requested server if it answers, else a throwaway cluster."""
    import asyncpg

    try:
        conn = await asyncpg.connect(requested, timeout=5)
        await conn.close()
        return requested, None
    except (OSError, asyncpg.PostgresError) as exc:
        print(f"no PostgreSQL at {requested} ({exc}); starting a throwaway cluster", file=sys.stderr)
    from stockade.testing.postgres import _LocalCluster, find_postgres_bin

    bindir = find_postgres_bin()
    if bindir is None:
        raise SystemExit("no PostgreSQL server and no PostgreSQL binaries: set --pg-url or POSTGRES_URL")
    cluster = _LocalCluster(bindir)
    await asyncio.to_thread(cluster.start)
    return cluster.url, cluster


async def measure(url: str, kind: str, args: argparse.Namespace) -> tuple[float, float, float] | None:
    """Serve the app on ``url``, publish one prompt, measure; (closed-loop ratio, read tail, trivial tail)."""
    project_id, key = await seed(url)
    port = free_port()
    env = {
        **os.environ,
        "PROMPT_API_DB__URL": url,
        "PROMPT_API_HTTP__PORT": str(port),
        "PROMPT_API_LOG__LEVEL": "WARNING",
        "PROMPT_API_MIGRATE_ON_STARTUP": "false",
        "PROMPT_API_NATS__URL": os.environ.get("NATS_URL", "nats://127.0.0.1:4222"),
    }
    if args.in_flight is not None:
        env["PROMPT_API_READ_PATH__STATEMENTS_IN_FLIGHT"] = str(args.in_flight)
    server = [sys.executable, "-m", "stockade.prompt_api"]
    if args.server_wrapper:
        server = [sys.executable, args.server_wrapper]
    proc = await asyncio.create_subprocess_exec(*server, env=env)
    try:
        for _ in range(600):
            try:
                _, w = await asyncio.open_connection("127.0.0.1", port)
                w.close()
                break
            except OSError:
                await asyncio.sleep(0.1)
        await publish(port, key, project_id)
        read_target = "/prompts/active-prompt-version?" + urlencode(
            {"api_key": key, "project_id": project_id, "prompt_name": "bench"}
        )
        trivial = Series("trivial  GET /healthz", "/healthz")
        read = Series("prompt   GET /prompts/active-prompt-version", read_target)
        print(
            f"== {kind}: {args.concurrency} keep-alive connections, {args.duration:.0f} s per endpoint in"
            f" {args.rounds} alternating slices after a {args.warmup:.0f} s warm-up; one uvicorn process;"
            f" load generator in its own process; {os.cpu_count()} CPUs"
        )
        load_before = load_average()
        for s in (trivial, read):
            await run_client(port, None, s.target, args.warmup, args.concurrency, proc.pid)
        for _ in range(args.rounds):
            for s in (trivial, read):
                await run_client(port, s, s.target, args.duration / args.rounds, args.concurrency, proc.pid)
        print(
            f"closed loop (saturation); load average (1, 5, 15 min) before: {load_before}; after: {load_average()}"
        )
        print(trivial.line())
        print(read.line())
        ratio = read.rps / trivial.rps
        print(f"ratio (prompt read / trivial throughput): {ratio:.2f}")
        if args.open_duration <= 0:
            return ratio, float("nan"), float("nan")

        # Open loop at half of each endpoint's own saturation throughput: the tail is the path's, not a queue's.
        open_trivial = Series(f"trivial  open loop {trivial.rps / 2:.0f}/s", "/healthz")
        open_read = Series(f"prompt   open loop {read.rps / 2:.0f}/s", read_target)
        load_before = load_average()
        for _ in range(args.rounds):
            for s, closed in ((open_trivial, trivial), (open_read, read)):
                await run_client(
                    port,
                    s,
                    s.target,
                    args.open_duration / args.rounds,
                    args.open_connections,
                    proc.pid,
                    rate=closed.rps / 2,
                )
        print(
            f"open loop (fixed arrival rate, half of saturation, {args.open_connections} connections); load average"
            f" before: {load_before}; after: {load_average()}"
        )
        for s in (open_trivial, open_read):
            print(f"{s.line()}  p99/p50 {s.tail_ratio:.2f}")
        met = open_read.tail_ratio <= 3
        print(
            f"{kind} read tail p99/p50 at half saturation: {open_read.tail_ratio:.2f}"
            f" (trivial {open_trivial.tail_ratio:.2f}); goal p99 <= 3 x p50: {'met' if met else 'NOT met'}"
        )
        return ratio, open_read.tail_ratio, open_trivial.tail_ratio
    finally:
        proc.terminate()
        await asyncio.wait_for(proc.wait(), timeout=30)


async def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument(
        "--pg-url", default=os.environ.get("POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
    )
    parser.add_argument("--db", choices=["postgres", "sqlite", "both"], default="both")
    parser.add_argument("--duration", type=float, default=20.0, help="measured seconds per endpoint")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=2, help="alternating slices per endpoint")
    parser.add_argument("--warmup", type=float, default=3.0, help="unmeasured seconds per endpoint first")
    parser.add_argument(
        "--open-duration", type=float, default=20.0, help="open-loop seconds per endpoint (0: skip)"
    )
    parser.add_argument("--open-connections", type=int, default=64, help="connections of the open loop")
    parser.add_argument(
        "--in-flight",
        type=int,
        default=None,
        help="PROMPT_API_READ_PATH__STATEMENTS_IN_FLIGHT (default: the service's)",
    )
    parser.add_argument(
        "--server-wrapper", default=None, help=argparse.SUPPRESS
    )  # profiling: a script to run
    args = parser.parse_args()

    results: dict[str, tuple[float, float, float] | None] = {}
    if args.db in ("postgres", "both"):
        results["PostgreSQL"] = await run_postgres(args)
    if args.db in ("sqlite", "both"):
        results["SQLite"] = await run_sqlite(args)
    print("== summary")
    for kind, r in results.items():
        if r is not None:
            print(
                f"{kind}: throughput ratio {r[0]:.2f}; open-loop p99/p50 read {r[1]:.2f}, trivial {r[2]:.2f}"
            )
    return 0


async def run_sqlite(args: argparse.Namespace) -> tuple[float, float, float] | None:
    import tempfile

    from stockade.prompt_api.migrate import upgrade

    with tempfile.TemporaryDirectory(prefix="bench-prompt-read-") as tmp:
        url = f"sqlite+aiosqlite:///{tmp}/prompt-api.db"
        await asyncio.to_thread(upgrade, url)
        return await measure(url, "SQLite", args)


async def run_postgres(args: argparse.Namespace) -> tuple[float, float, float] | None:
    import asyncpg

    from stockade.prompt_api.migrate import upgrade

    admin, cluster = await postgres_admin_url(args.pg_url)
    name = f"bench_{uuid.uuid4().hex[:8]}"
    conn = await asyncpg.connect(admin)
    await conn.execute(f'CREATE DATABASE "{name}"')
    await conn.close()
    url = urlunsplit(urlsplit(admin)._replace(scheme="postgresql+asyncpg", path=f"/{name}"))
    try:
        await asyncio.to_thread(upgrade, url)
        return await measure(url, "PostgreSQL", args)
    finally:
        conn = await asyncpg.connect(admin)
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await conn.close()
        if cluster is not None:
            await asyncio.to_thread(cluster.stop)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--client":
        sys.exit(client_main(sys.argv[2:]))
    sys.exit(asyncio.run(main()))
