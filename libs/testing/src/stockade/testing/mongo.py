"""MongoDB: ``MONGODB_URL``, else a mongoeco wire-protocol server in a Python 3.13 venv, else skip.

mongoeco needs Python >= 3.13; the harness looks for one (``STOCKADE_MONGOECO_PYTHON``, pyenv's
``~/.pyenv/versions/3.13*``, ``python3.13``/``python3.14`` on PATH), creates or reuses the venv
``~/.cache/stockade/mongoeco-<version>``, installs ``mongoeco[wire]`` there once, and runs
:mod:`stockade.testing.mongoeco_runner` in it on a free port.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import pytest_asyncio

from stockade.testing.asyncbridge import run_blocking
from stockade.testing.ports import free_port, wait_until
from stockade.testing.processes import ManagedProcess
from stockade.testing.report import ServerRecord, display_url, report_of
from stockade.testing.sidevenv import cached_venv, find_python

if TYPE_CHECKING:
    from pymongo import AsyncMongoClient

__all__ = ["MONGOECO_VERSION", "find_python313", "mongodb_client", "mongodb_url", "mongoeco_venv"]

MONGOECO_VERSION = os.environ.get("STOCKADE_MONGOECO_VERSION", "4.11.0")
HOW_TO = (
    "set MONGODB_URL=mongodb://host:port, or make a Python >= 3.13 available (pyenv install 3.13, "
    "or STOCKADE_MONGOECO_PYTHON=/path/to/python3.13) so the harness can run mongoeco[wire]"
)
RUNNER = Path(__file__).with_name("mongoeco_runner.py")


def find_python313() -> Path | None:
    """A Python >= 3.13 interpreter for mongoeco, or None."""
    return find_python(13, "STOCKADE_MONGOECO_PYTHON")


def mongoeco_venv(python: Path, version: str = MONGOECO_VERSION) -> Path:
    """Create or reuse ``~/.cache/stockade/mongoeco-<version>`` with mongoeco[wire]; return its python."""
    return cached_venv(f"mongoeco-{version}", python, [f"mongoeco[wire]=={version}"])


async def _ping(url: str) -> bool:
    from pymongo import AsyncMongoClient

    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(url, serverSelectionTimeoutMS=1000)
    try:
        await client.admin.command("ping")
        return True
    except Exception:
        return False
    finally:
        await client.close()


def _answers(url: str) -> bool:
    try:
        return run_blocking(lambda: _ping(url), timeout=15)
    except Exception:
        return False


class _MongoEcoServer:
    def __init__(self, venv_python: Path) -> None:
        self.base = Path(tempfile.mkdtemp(prefix="stockade-mongoeco-"))
        self.port = free_port()
        self.url = f"mongodb://127.0.0.1:{self.port}/?directConnection=true"
        self.process = ManagedProcess(
            [str(venv_python), str(RUNNER), "--port", str(self.port)],
            log_path=self.base / "mongoeco.log",
            cwd=self.base,
            die_with_parent=True,
        )
        if not wait_until(lambda: _answers(self.url), timeout=60, interval=0.2, alive=self.process.alive):
            self.stop()
            raise RuntimeError(f"mongoeco did not answer a ping; log:\n{self.process.log_tail()}")
        ready = [line for line in self.process.log_tail(50).splitlines() if line.startswith("READY ")]
        self.version = f"mongoeco {ready[-1].split()[2]}" if ready else "mongoeco"

    def stop(self) -> None:
        self.process.stop()
        shutil.rmtree(self.base, ignore_errors=True)


@pytest.fixture(scope="session")
def mongodb_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """URL of a MongoDB wire-protocol server (``MONGODB_URL`` or a local mongoeco)."""
    report = report_of(request.config)
    env_url = os.environ.get("MONGODB_URL")
    if env_url:
        if not _answers(env_url):
            report.unavailable(
                "mongo",
                "env MONGODB_URL",
                "does not answer",
                f"MONGODB_URL={display_url(env_url)} does not answer a ping",
            )
        report.record("mongo", ServerRecord("env MONGODB_URL", None, display_url(env_url)))
        yield env_url
        return
    python = find_python313()
    if python is None:
        report.unavailable(
            "mongo", "mongoeco", "no Python >= 3.13", f"no Python >= 3.13 found for mongoeco; {HOW_TO}"
        )
    try:
        venv_python = mongoeco_venv(python)
        server = _MongoEcoServer(venv_python)
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
        report.unavailable(
            "mongo", "mongoeco", "failed to start", f"could not run mongoeco with {python}: {exc}; {HOW_TO}"
        )
    report.record(
        "mongo",
        ServerRecord(
            "started locally (mongoeco wire server)", server.version, server.url, pid=server.process.pid
        ),
    )
    try:
        yield server.url
    finally:
        server.stop()


@pytest_asyncio.fixture
async def mongodb_client(mongodb_url: str) -> AsyncIterator[AsyncMongoClient[dict[str, Any]]]:
    """pymongo's ``AsyncMongoClient`` on ``mongodb_url`` (closed after the test); use unique db names."""
    from pymongo import AsyncMongoClient

    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(mongodb_url, serverSelectionTimeoutMS=5000)
    try:
        yield client
    finally:
        await client.close()
