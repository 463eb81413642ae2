import asyncio
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import httpx
import pytest
from sqlalchemy import text

from stockade.contracts.nats_sync import sync_with_server
from stockade.contracts.replies import HealthReply
from stockade.runtime.app import create_service_app
from stockade.runtime.db import create_engine
from stockade.runtime.nats import NatsUnavailableError, connect_nats, drain, serve_health
from stockade.runtime.settings import DatabaseSettings, NatsSettings, ServiceSettings


@pytest.mark.postgres
async def test_engine_talks_to_postgres_through_asyncpg(postgres_database):
    engine = create_engine(postgres_database.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        assert engine.dialect.driver == "asyncpg"
        async with engine.connect() as conn:
            version = (await conn.execute(text("SHOW server_version"))).scalar_one()
        assert version.split(".")[0].isdigit()
    finally:
        await engine.dispose()


async def test_sqlite_engine_creates_its_directory_and_uses_wal(tmp_path):
    db = tmp_path / "nested" / "dir" / "s.db"
    engine = create_engine(f"sqlite:///{db}")
    try:
        async with engine.begin() as conn:
            mode = (await conn.execute(text("PRAGMA journal_mode"))).scalar_one()
            fk = (await conn.execute(text("PRAGMA foreign_keys"))).scalar_one()
        assert mode == "wal" and fk == 1 and db.exists()
    finally:
        await engine.dispose()


@pytest.mark.nats
async def test_health_request_and_graceful_drain(nats_url):
    nc = await connect_nats(NatsSettings(url=nats_url), name="t")
    await serve_health(nc, "test.cmd.health.v1", "svc-a")
    # serve_health does not wait for the server: the request below, from another connection, could overtake it
    await sync_with_server(nc)
    client = await connect_nats(NatsSettings(url=nats_url), name="c")
    try:
        reply = await client.request("test.cmd.health.v1", b"{}", timeout=5)
        health = HealthReply.model_validate_json(reply.data)
        assert (health.status, health.service) == ("ok", "svc-a")
    finally:
        await drain(nc)
        await drain(client)
    assert nc.is_closed and client.is_closed


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_connect_fails_fast_with_a_hint_when_nothing_listens():
    settings = NatsSettings(url=f"nats://127.0.0.1:{free_port()}", startup_wait_s=0.5, connect_timeout_s=0.2)
    with pytest.raises(NatsUnavailableError, match="NATS__URL"):
        await asyncio.wait_for(connect_nats(settings), timeout=10)


@pytest.mark.nats
@pytest.mark.postgres
async def test_service_app_readiness_reflects_real_dependencies(nats_server_factory, postgres_database):
    server = nats_server_factory()
    settings = ServiceSettings(
        service_name="demo", nats=NatsSettings(url=server.url), db=DatabaseSettings(url=postgres_database)
    )
    app = create_service_app(settings, title="demo", health_subject="demo.cmd.health.v1")
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            assert (await c.get("/healthz")).json()["status"] == "ok"
            ready = await c.get("/readyz")
            assert ready.status_code == 200 and ready.json()["checks"] == {"database": "ok", "nats": "ok"}
            server.stop()
            await asyncio.sleep(0.3)
            down = await c.get("/readyz")
            assert down.status_code == 503
            assert down.json()["checks"]["nats"].startswith("unavailable")
            assert down.json()["checks"]["database"] == "ok"


class _Health(BaseHTTPRequestHandler):
    status = 200

    def do_GET(self):  # noqa: N802
        self.send_response(self.status)
        self.end_headers()
        self.wfile.write(b'{"status":"ok"}')

    def log_message(self, *args):
        pass


def run_probe(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "stockade.runtime.probe", *args], capture_output=True, text=True, timeout=30
    )


def test_probe_cli_over_real_http():
    server = HTTPServer(("127.0.0.1", 0), _Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        ok = run_probe(f"http://127.0.0.1:{server.server_port}/healthz")
        assert ok.returncode == 0, ok.stderr
        _Health.status = 503
        bad = run_probe(f"http://127.0.0.1:{server.server_port}/healthz")
        assert bad.returncode == 1 and "unhealthy" in bad.stderr
    finally:
        _Health.status = 200
        server.shutdown()
    refused = run_probe(f"http://127.0.0.1:{free_port()}/healthz", "--timeout", "1")
    assert refused.returncode == 1


@pytest.mark.nats
async def test_probe_cli_over_nats_request_reply(nats_url):
    nc = await connect_nats(NatsSettings(url=nats_url), name="t")
    await serve_health(nc, "probe.cmd.health.v1", "svc-b")
    try:
        result = await asyncio.to_thread(run_probe, nats_url, "--subject", "probe.cmd.health.v1")
        assert result.returncode == 0, result.stderr
        missing = await asyncio.to_thread(
            run_probe, nats_url, "--subject", "nobody.cmd.health.v1", "--timeout", "1"
        )
        assert missing.returncode == 1
    finally:
        await drain(nc)
    _ = httpx  # imported for the readiness test above
