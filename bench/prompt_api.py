"""Benchmark: GET /prompts/active-prompt-version against a trivial endpoint of the same app (not a test).

    .venv/bin/python bench/prompt_api.py [--pg-url postgresql://postgres@127.0.0.1:5432/postgres]
                                          [--duration 20] [--concurrency 32]

Creates a throwaway PostgreSQL database, migrates and seeds it, serves prompt-api with
``python -m stockade.prompt_api`` (uvicorn, one process) on a free loopback port, then drives it with
``--concurrency`` keep-alive HTTP/1.1 connections for ``--duration`` seconds per endpoint: first the trivial
``/healthz`` of the same app, then the prompt read. Prints requests/s, p50 and p99 of each, and last the ratio
(goal: >= 0.5, p99 < 10 ms). Numbers drift with machine load: compare the ratio, measured in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import sys
import time
import uuid
from urllib.parse import urlencode, urlsplit, urlunsplit

import asyncpg

from stockade import identity
from stockade.prompt_api.migrate import upgrade
from stockade.runtime import create_engine, session_factory


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def seed(url: str) -> tuple[str, str]:
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


async def one_connection(
    port: int, target: bytes, stop_at: float, latencies: list[float], errors: list[str]
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    request = b"GET " + target + b" HTTP/1.1\r\nHost: bench\r\nConnection: keep-alive\r\n\r\n"
    try:
        while time.perf_counter() < stop_at:
            started = time.perf_counter()
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            status = head[9:12]
            length = 0
            for line in head.split(b"\r\n"):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            if length:
                await reader.readexactly(length)
            latencies.append(time.perf_counter() - started)
            if status != b"200":
                errors.append(status.decode())
    finally:
        writer.close()


async def drive(port: int, target: str, duration: float, concurrency: int) -> dict[str, float]:
    latencies: list[float] = []
    errors: list[str] = []
    # warm-up (connection pools, caches), not measured
    await asyncio.gather(
        *(
            one_connection(port, target.encode(), time.perf_counter() + 1.0, [], [])
            for _ in range(concurrency)
        )
    )
    started = time.perf_counter()
    stop_at = started + duration
    await asyncio.gather(
        *(one_connection(port, target.encode(), stop_at, latencies, errors) for _ in range(concurrency))
    )
    elapsed = time.perf_counter() - started
    if errors:
        raise RuntimeError(
            f"{len(errors)} non-200 answers from {target.split('?')[0]}: {sorted(set(errors))}"
        )
    qs = statistics.quantiles(latencies, n=100)
    return {
        "rps": len(latencies) / elapsed,
        "p50_ms": qs[49] * 1000,
        "p99_ms": qs[98] * 1000,
        "n": len(latencies),
    }


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


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--pg-url", default=os.environ.get("POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
    )
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()

    name = f"bench_{uuid.uuid4().hex[:8]}"
    admin = args.pg_url
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
            "PROMPT_API_DB__POOL_SIZE": "10",
            "PROMPT_API_NATS__URL": os.environ.get("NATS_URL", "nats://127.0.0.1:4222"),
        }
        proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "stockade.prompt_api", env=env)
        for _ in range(600):
            try:
                _, w = await asyncio.open_connection("127.0.0.1", port)
                w.close()
                break
            except OSError:
                await asyncio.sleep(0.1)
        await publish(port, key, project_id)
        read = "/prompts/active-prompt-version?" + urlencode(
            {"api_key": key, "project_id": project_id, "prompt_name": "bench"}
        )
        print(
            f"{args.concurrency} keep-alive connections, {args.duration:.0f} s per endpoint, PostgreSQL, one uvicorn process"
        )
        trivial = await drive(port, "/healthz", args.duration, args.concurrency)
        print(
            f"trivial  GET /healthz                          {trivial['rps']:8.0f} req/s  p50 {trivial['p50_ms']:6.2f} ms  p99 {trivial['p99_ms']:6.2f} ms  (n={trivial['n']})"
        )
        real = await drive(port, read, args.duration, args.concurrency)
        print(
            f"prompt   GET /prompts/active-prompt-version    {real['rps']:8.0f} req/s  p50 {real['p50_ms']:6.2f} ms  p99 {real['p99_ms']:6.2f} ms  (n={real['n']})"
        )
        print(f"ratio (prompt read / trivial throughput): {real['rps'] / trivial['rps']:.2f}")
    finally:
        if proc is not None:
            proc.terminate()
            await asyncio.wait_for(proc.wait(), timeout=30)
        conn = await asyncpg.connect(admin)
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await conn.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
