"""prompt-api stops in bounded time in every state it can be stopped in: NATS unreachable, NATS
connecting to a server that never answers, NATS frozen while the outbox relay publishes, PostgreSQL holding the
relay's and a read's statements behind a lock. Each state is stopped three times in a row.

The bound is generous (``STOP_BOUND_S``, several times the configured ``shutdown_timeout_s`` of 2 s): the
assertion is "it stops", not "it is fast". A stop that hangs is left running in its task (never awaited again),
so this test fails instead of hanging; ``python -m stockade.prompt_api`` with SIGTERM is checked the same way.
"""

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time

import asyncpg
import httpx
import pytest

from stockade.prompt_api.main import create_app
from stockade.prompt_api.settings import OutboxSettings
from stockade.runtime.settings import NatsSettings
from stockade.testing.ports import free_port
from stockade.testing.watchdog import describe_tasks

STOP_BOUND_S = float(os.environ.get("TEST_STOP_BOUND_S", "30"))
ROUNDS = 3
NATS_JS_CONF = "listen: 127.0.0.1:{port}\njetstream: {{ store_dir: {store} }}\n"


def _settings(settings_for, db_url, nats_url, *, outbox=False):
    settings = settings_for(
        db_url,
        nats_url,
        outbox=OutboxSettings(enabled=outbox, interval_s=0.2, stop_timeout_s=1.0),
    )
    settings.nats = NatsSettings(url=nats_url, connect_timeout_s=0.5, drain_timeout_s=1.0)
    settings.shutdown_timeout_s = 2.0
    return settings


async def _start(settings):
    app = create_app(settings)
    lifespan = app.router.lifespan_context(app)
    await asyncio.wait_for(lifespan.__aenter__(), timeout=60)
    return app, lifespan


async def _assert_stops(lifespan, state: str) -> None:
    stop = asyncio.create_task(lifespan.__aexit__(None, None, None), name=f"stop: {state}")
    done, _ = await asyncio.wait({stop}, timeout=STOP_BOUND_S)
    assert stop in done, (
        f"prompt-api did not stop within {STOP_BOUND_S} s ({state}); tasks:\n{describe_tasks()}"
    )
    stop.result()  # a stop never raises


@contextlib.asynccontextmanager
async def _silent_server():
    """Accepts TCP connections and never says a word: a NATS client waits for the INFO line forever."""
    held = []

    async def hold(reader, writer):
        held.append(writer)
        with contextlib.suppress(Exception):
            await reader.read()

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    try:
        yield f"nats://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        for writer in held:
            writer.close()
        server.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.wait_closed(), timeout=5)


async def _publish(client, world, name):
    body = {"project_id": world.direct.id, "prompt_name": name, "content": "hello"}
    return await client.post(
        "/prompts/active-prompt-version", headers={"X-API-Key": world.write_key}, json=body
    )


async def test_stops_with_nats_unreachable(db_url, settings_for, world):
    for round_ in range(ROUNDS):
        _, lifespan = await _start(
            _settings(settings_for, db_url, f"nats://127.0.0.1:{free_port()}", outbox=True)
        )
        await asyncio.sleep(0.3 * round_)  # stopped at different points of the connect retry loop
        await _assert_stops(lifespan, f"NATS unreachable, round {round_}")


async def test_stops_while_nats_connects_to_a_server_that_never_answers(db_url, settings_for, world):
    async with _silent_server() as url:
        for round_ in range(ROUNDS):
            _, lifespan = await _start(_settings(settings_for, db_url, url, outbox=True))
            await asyncio.sleep(0.2 + 0.4 * round_)
            await _assert_stops(lifespan, f"NATS silent, round {round_}")


@pytest.mark.nats
@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
async def test_stops_while_the_relay_publishes_to_a_frozen_nats(
    db_url, settings_for, world, nats_server_factory, tmp_path
):
    for round_ in range(ROUNDS):
        port = free_port()
        server = nats_server_factory(
            NATS_JS_CONF.format(port=port, store=tmp_path / f"js{round_}"), port=port
        )
        app, lifespan = await _start(_settings(settings_for, db_url, server.url, outbox=True))
        try:
            deadline = time.monotonic() + 30
            while app.state.service.nats is None:  # the background connect has finished
                assert time.monotonic() < deadline, "prompt-api never connected to NATS"
                await asyncio.sleep(0.05)
            os.kill(server.process.pid, signal.SIGSTOP)  # the server stops answering mid-conversation
            async with httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://p"
            ) as client:
                r = await _publish(client, world, f"frozen-{round_}")
                assert r.status_code == 201, (
                    r.text
                )  # committed: the relay now publishes into the frozen server
            await asyncio.sleep(0.3)
            await _assert_stops(lifespan, f"NATS frozen mid-publish, round {round_}")
        finally:
            os.kill(server.process.pid, signal.SIGCONT)
            server.stop()


@pytest.mark.postgres
@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
async def test_stops_while_postgres_holds_the_relay_and_a_read(db_url, settings_for, world):
    dsn = db_url.replace("postgresql+asyncpg://", "postgresql://")
    for round_ in range(ROUNDS):
        app, lifespan = await _start(
            _settings(settings_for, db_url, f"nats://127.0.0.1:{free_port()}", outbox=True)
        )
        locker = await asyncpg.connect(dsn, timeout=10)
        read = None
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://p")
        try:
            tx = locker.transaction()
            await tx.start()
            await locker.execute("LOCK TABLE outbox, prompts IN ACCESS EXCLUSIVE MODE")
            read = asyncio.create_task(  # a hot read stuck behind the lock, holding a pool connection
                client.get(
                    "/prompts/active-prompt-version",
                    params={"project_id": world.direct.id, "prompt_name": "x", "api_key": world.read_key},
                )
            )
            await asyncio.sleep(0.5)  # the relay's round and the read are now waiting on the lock
            await _assert_stops(lifespan, f"PostgreSQL holding the relay and a read, round {round_}")
        finally:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(locker.close(), timeout=10)
            if read is not None:
                read.cancel()
                await asyncio.wait({read}, timeout=10)
            await asyncio.wait_for(client.aclose(), timeout=10)


def test_the_process_stops_on_sigterm_with_nats_away(tmp_path, sqlite_template):
    """``python -m stockade.prompt_api`` (SQLite, nothing on the NATS port): SIGTERM once healthy, three times."""
    import shutil

    for round_ in range(ROUNDS):
        db = tmp_path / f"p{round_}.db"
        shutil.copy(sqlite_template, db)
        port = free_port()
        env = {
            **os.environ,
            "PROMPT_API_DB__URL": f"sqlite+aiosqlite:///{db}",
            "PROMPT_API_HTTP__PORT": str(port),
            "PROMPT_API_NATS__URL": f"nats://127.0.0.1:{free_port()}",
            "PROMPT_API_SHUTDOWN_TIMEOUT_S": "2",
        }
        log = tmp_path / f"server{round_}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "stockade.prompt_api"], env=env, stdout=out, stderr=subprocess.STDOUT
            )
        try:
            deadline = time.monotonic() + 90
            while True:
                assert proc.poll() is None, log.read_text()
                with contextlib.suppress(httpx.HTTPError):
                    if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                        break
                assert time.monotonic() < deadline, "prompt-api did not become healthy"
                time.sleep(0.1)
            time.sleep(0.5 * round_)
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=STOP_BOUND_S)
            except subprocess.TimeoutExpired:
                pytest.fail(f"still running {STOP_BOUND_S} s after SIGTERM:\n{log.read_text()[-3000:]}")
            assert "prompt-api stopped" in log.read_text(), log.read_text()[-3000:]
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
