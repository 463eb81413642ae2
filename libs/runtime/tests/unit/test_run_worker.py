"""``run_worker``: a headless service's ``python -m`` (trust-broker's): logging configured once from its
settings, the worker started, stopped on SIGTERM, the process ends cleanly. Run in a child process, as a
deployment runs it."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

WORKER = textwrap.dedent(
    """
    import logging
    import sys

    from stockade.runtime.entrypoint import run_worker
    from stockade.runtime.settings import ServiceSettings

    log = logging.getLogger("demo.worker")


    class Demo:
        async def start(self) -> None:
            log.info("worker started")
            print("started", flush=True)

        async def stop(self) -> None:
            log.info("worker stopped")


    class Settings(ServiceSettings):
        service_name: str = "demo-worker"


    run_worker(Settings, lambda settings: Demo())
    """
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_a_worker_runs_until_sigterm_and_logs_as_its_service() -> None:
    env = {"HTTP__PORT": str(free_port()), "HTTP__HOST": "127.0.0.1", "LOG__JSON_FORMAT": "true"}
    proc = subprocess.Popen(
        [sys.executable, "-c", WORKER],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**_base_env(), **env},
    )
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 60
        line = ""
        while time.monotonic() < deadline and line.strip() != "started":
            line = proc.stdout.readline()
            if not line and proc.poll() is not None:
                break
        assert line.strip() == "started", proc.stderr.read() if proc.stderr else ""
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    assert proc.returncode == 0, err
    records = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    ours = [r["msg"] for r in records if r.get("logger") == "demo.worker"]
    assert ours == ["worker started", "worker stopped"]
    assert all(r.get("service") == "demo-worker" for r in records)


def _base_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("HTTP__", "LOG__"))}
