"""Benchmark: GET /prompts/active-prompt-version against a trivial endpoint of the same app (not a test).

    .venv/bin/python bench/prompt_read.py [--pg-url postgresql://postgres@127.0.0.1:5432/postgres]
                                          [--duration 20] [--concurrency 32] [--rounds 2] [--warmup 3]

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
load average, and last the ratio (goal: >= 0.5 with the read's p99 < 10 ms).
"""

from __future__ import annotations

import argparse
import asyncio
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


def client_main(argv: list[str]) -> int:
    port, target, seconds, concurrency = int(argv[0]), argv[1], float(argv[2]), int(argv[3])
    try:
        import uvloop

        uvloop.install()
    except ImportError:  # pragma: no cover - uvloop is a prompt-api dependency
        pass
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
    port: int, series: Series | None, target: str, seconds: float, concurrency: int, pid: int
):
    cpu0 = process_cpu_seconds(pid)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        __file__,
        "--client",
        str(port),
        target,
        str(seconds),
        str(concurrency),
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
    from stockade.runtime import create_engine, session_factory

    engine = create_engine(url)
    try:
        sessions = session_factory(engine)
        async with sessions() as s:
            org = await identity.create_organisation(s, "bench")
            user = await identity.create_user(s, "bench@example.com")
            project = await identity.create_project(s, org.id, "bench")
            await identity.add_project_member(s, project.id, user.id)
            key = (await identity.create_api_key(s, user.id, scope="write")).key
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


async def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument(
        "--pg-url", default=os.environ.get("POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
    )
    parser.add_argument("--duration", type=float, default=20.0, help="measured seconds per endpoint")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=2, help="alternating slices per endpoint")
    parser.add_argument("--warmup", type=float, default=3.0, help="unmeasured seconds per endpoint first")
    parser.add_argument(
        "--in-flight",
        type=int,
        default=None,
        help="PROMPT_API_READ_PATH__STATEMENTS_IN_FLIGHT (default: the service's)",
    )
    args = parser.parse_args()

    import asyncpg

    from stockade.prompt_api.migrate import upgrade

    admin, cluster = await postgres_admin_url(args.pg_url)
    name = f"bench_{uuid.uuid4().hex[:8]}"
    conn = await asyncpg.connect(admin)
    await conn.execute(f'CREATE DATABASE "{name}"')
    await conn.close()
    url = urlunsplit(urlsplit(admin)._replace(scheme="postgresql+asyncpg", path=f"/{name}"))
    proc = None
    try:
        await asyncio.to_thread(upgrade, url)
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
        proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "stockade.prompt_api", env=env)
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
            f"{args.concurrency} keep-alive connections, {args.duration:.0f} s per endpoint in {args.rounds}"
            f" alternating slices after a {args.warmup:.0f} s warm-up; PostgreSQL; one uvicorn process;"
            f" load generator in its own process; {os.cpu_count()} CPUs"
        )
        load_before = load_average()
        for s in (trivial, read):
            await run_client(port, None, s.target, args.warmup, args.concurrency, proc.pid)
        for _ in range(args.rounds):
            for s in (trivial, read):
                await run_client(port, s, s.target, args.duration / args.rounds, args.concurrency, proc.pid)
        print(f"load average (1, 5, 15 min) before: {load_before}; after: {load_average()}")
        print(trivial.line())
        print(read.line())
        ratio = read.rps / trivial.rps
        met = ratio >= 0.5 and read.p99_ms < 10
        print(f"goal (ratio >= 0.5 and read p99 < 10 ms): {'met' if met else 'NOT met'}")
        print(f"ratio (prompt read / trivial throughput): {ratio:.2f}")
    finally:
        if proc is not None:
            proc.terminate()
            await asyncio.wait_for(proc.wait(), timeout=30)
        conn = await asyncpg.connect(admin)
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await conn.close()
        if cluster is not None:
            await asyncio.to_thread(cluster.stop)
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--client":
        sys.exit(client_main(sys.argv[2:]))
    sys.exit(asyncio.run(main()))
