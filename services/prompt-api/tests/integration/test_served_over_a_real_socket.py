"""python -m stockade.prompt_api under uvicorn on a free port: real sockets, startup migrations, clean logs."""

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest

from stockade import identity
from stockade.runtime.db import create_engine, session_factory
from stockade.testing.ports import free_port


def _raw_get(port, target):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(f"GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    return data


@pytest.fixture
async def served(tmp_path, sqlite_template):
    db = tmp_path / "served.db"
    shutil.copy(sqlite_template, db)
    url = f"sqlite+aiosqlite:///{db}"
    engine = create_engine(url)
    async with session_factory(engine)() as s:
        org = await identity.create_organisation(s, "served")
        user = await identity.create_user(s, "served@example.com")
        project = await identity.create_project(s, org.id, "p")
        await identity.add_project_member(s, project.id, user.id)
        key = (await identity.create_api_key(s, user.id, scope="write")).key
        await s.commit()
    await engine.dispose()
    port = free_port()
    env = {
        **os.environ,
        "PROMPT_API_DB__URL": url,
        "PROMPT_API_HTTP__PORT": str(port),
        "PROMPT_API_NATS__URL": f"nats://127.0.0.1:{free_port()}",  # NATS down: serving must not care
        "PROMPT_API_NATS__CONNECT_TIMEOUT_S": "0.3",
        "PROMPT_API_OUTBOX__INTERVAL_S": "0.3",
    }
    log = tmp_path / "server.log"
    with log.open("wb") as out:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "stockade.prompt_api", env=env, stdout=out, stderr=subprocess.STDOUT
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        async with httpx.AsyncClient() as probe:
            while True:
                try:
                    if (await probe.get(f"{base}/readyz", timeout=1)).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                assert proc.returncode is None, log.read_text()
                assert time.monotonic() < deadline, log.read_text()
                await asyncio.sleep(0.2)
        yield base, port, key, project.id, log
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), timeout=20)
        except TimeoutError:
            proc.kill()


async def test_real_server_round_trip_and_no_key_in_logs(served):
    base, port, key, project_id, log = served
    async with httpx.AsyncClient(base_url=base, timeout=10) as client:
        r = await client.post(
            "/prompts/active-prompt-version",
            headers={"X-API-Key": key},
            json={"project_id": project_id, "prompt_name": "hello", "content": "Hi"},
        )
        assert r.status_code == 201, r.text
        params = {"api_key": key, "project_id": project_id, "prompt_name": "hello"}
        read = await client.get("/prompts/active-prompt-version", params=params)
        assert read.status_code == 200 and read.json()["content"] == "Hi"
        again = await client.get(
            "/prompts/active-prompt-version", params=params, headers={"If-None-Match": read.headers["etag"]}
        )
        assert again.status_code == 304
        miss = await client.get("/prompts/active-prompt-version", params={**params, "prompt_name": "nope"})
        assert (
            miss.status_code == 404
            and miss.content == b'{"error":{"code":"not_found","message":"not found"}}'
        )
        assert (
            await client.post("/prompts/active-prompt-version", params={"api_key": key}, json={})
        ).status_code == 401
    # traversal sent raw over the socket (no client-side normalisation)
    for target in (
        f"/skills/../../etc/passwd?project_id={project_id}",
        f"/skills/hello/%2e%2e/%2e%2e/x?project_id={project_id}&api_key={key}",
    ):
        raw = await asyncio.to_thread(_raw_get, port, target)
        assert raw.split(b"\r\n", 1)[0] in (
            b"HTTP/1.1 400 Bad Request",
            b"HTTP/1.1 401 Unauthorized",
            b"HTTP/1.1 404 Not Found",
        ), raw
        assert b"root:" not in raw
    raw = await asyncio.to_thread(
        _raw_get, port, f"/skills/hello/%2e%2e/%2e%2e/x?project_id={project_id}&api_key={key}"
    )
    assert raw.startswith(b"HTTP/1.1 400")
    await asyncio.sleep(0.5)
    text = log.read_text()
    assert key not in text and key[16:48] not in text
