"""PostgreSQL: ``POSTGRES_URL``, else a throwaway cluster started on a free port, else skip."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from stockade.testing.asyncbridge import run_blocking
from stockade.testing.names import make_unique_name
from stockade.testing.ports import free_port, wait_until
from stockade.testing.processes import ManagedProcess
from stockade.testing.report import ServerRecord, display_url, report_of

__all__ = [
    "find_postgres_bin",
    "postgres_database",
    "postgres_url",
    "temporary_database",
    "to_asyncpg_url",
]

HOW_TO = (
    "set POSTGRES_URL=postgresql://user@host:port/postgres, or install the PostgreSQL server binaries "
    "(Debian: apt-get install postgresql) so the harness can start a throwaway cluster"
)


def find_postgres_bin() -> Path | None:
    """Directory with ``initdb`` and ``postgres``: newest /usr/lib/postgresql/*/bin, then PATH."""
    candidates: list[Path] = []
    root = Path("/usr/lib/postgresql")
    if root.is_dir():
        versions = sorted(
            (p for p in root.iterdir() if (p / "bin" / "initdb").exists()),
            key=lambda p: [int(x) for x in re.findall(r"\d+", p.name)] or [0],
            reverse=True,
        )
        candidates.extend(p / "bin" for p in versions)
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(Path(on_path).parent)
    for directory in candidates:
        if (directory / "initdb").exists() and (directory / "postgres").exists():
            return directory
    return None


def _libpq_url(url: str) -> str:
    """``postgresql+asyncpg://...`` -> ``postgresql://...`` (what asyncpg.connect and libpq accept)."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(scheme="postgresql"))


def to_asyncpg_url(url: str, database: str) -> str:
    """The SQLAlchemy URL ``postgresql+asyncpg://.../<database>`` for an admin URL."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(scheme="postgresql+asyncpg", path=f"/{database}"))


async def _server_version(url: str) -> str:
    import asyncpg

    conn = await asyncpg.connect(url, timeout=5)
    try:
        version: str = await conn.fetchval("SHOW server_version")
        return version
    finally:
        await conn.close()


async def _execute(url: str, sql: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(url, timeout=10)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


def _probe(url: str) -> str | None:
    try:
        return run_blocking(lambda: _server_version(url), timeout=15)
    except Exception:
        return None


class _LocalCluster:
    """initdb + postgres in a temp dir, as the ``postgres`` user when we are root."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.user = _server_user()
        self.base = Path(tempfile.mkdtemp(prefix="stockade-pg-"))
        self.process: ManagedProcess | None = None
        self.port = free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def start(self) -> str:
        data = self.base / "data"
        log = self.base / "postgres.log"
        if self.user is not None:
            shutil.chown(self.base, user=self.user, group=self.user)
        init = subprocess.run(
            [
                str(self.bindir / "initdb"),
                "-D",
                str(data),
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-sync",
                "--no-instructions",
            ],
            capture_output=True,
            text=True,
            user=self.user,
            group=self.user,
            extra_groups=[] if self.user else None,
            check=False,
        )
        if init.returncode != 0:
            raise RuntimeError(f"initdb failed: {init.stderr.strip() or init.stdout.strip()}")
        self.process = ManagedProcess(
            [
                str(self.bindir / "postgres"),
                "-D",
                str(data),
                "-p",
                str(self.port),
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                f"unix_socket_directories={self.base}",
                "-c",
                "fsync=off",
                "-c",
                "synchronous_commit=off",
                "-c",
                "full_page_writes=off",
            ],
            log_path=log,
            user=self.user,
            stop_signal=signal.SIGINT,  # "fast" shutdown: does not wait for clients
            die_with_parent=True,
        )
        version: list[str] = []

        def ready() -> bool:
            got = _probe(self.url)
            if got:
                version.append(got)
            return bool(got)

        if not wait_until(ready, timeout=60, interval=0.1, alive=self.process.alive):
            raise RuntimeError(f"postgres did not become ready; log:\n{self.process.log_tail()}")
        return version[0]

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
        shutil.rmtree(self.base, ignore_errors=True)


def _server_user() -> str | None:
    """``postgres`` when we are root (PostgreSQL refuses to run as root), else None (ourselves)."""
    if os.geteuid() != 0:
        return None
    import pwd

    try:
        pwd.getpwnam("postgres")
    except KeyError:
        raise RuntimeError("running as root and there is no 'postgres' user to run the cluster as") from None
    return "postgres"


@pytest.fixture(scope="session")
def postgres_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """Admin libpq URL (``postgresql://user@host:port/postgres``) of a real PostgreSQL."""
    report = report_of(request.config)
    env_url = os.environ.get("POSTGRES_URL")
    if env_url:
        url = _libpq_url(env_url)
        version = _probe(url)
        if version is None:
            report.unavailable(
                "postgres",
                "env POSTGRES_URL",
                "does not answer",
                f"POSTGRES_URL={display_url(env_url)} does not answer",
            )
        report.record("postgres", ServerRecord("env POSTGRES_URL", version, display_url(url)))
        yield url
        return
    bindir = find_postgres_bin()
    if bindir is None:
        report.unavailable(
            "postgres", "local", "no initdb/postgres binaries", f"no initdb/postgres binaries found; {HOW_TO}"
        )
    try:
        cluster = _LocalCluster(bindir)
    except RuntimeError as exc:
        report.unavailable("postgres", "local", str(exc), f"{exc}; {HOW_TO}")
    try:
        version = cluster.start()
    except (RuntimeError, OSError) as exc:
        cluster.stop()
        report.unavailable(
            "postgres",
            "local",
            "failed to start",
            f"could not start a local cluster from {bindir}: {exc}; {HOW_TO}",
        )
    pid = cluster.process.pid if cluster.process else None
    report.record(
        "postgres", ServerRecord(f"started locally ({bindir})", version, display_url(cluster.url), pid=pid)
    )
    try:
        yield cluster.url
    finally:
        cluster.stop()


@contextlib.contextmanager
def temporary_database(admin_url: str, prefix: str = "test") -> Iterator[str]:
    """Create a uniquely named database, yield its ``postgresql+asyncpg://`` URL, drop it WITH (FORCE)."""
    name = make_unique_name(prefix)
    run_blocking(lambda: _execute(admin_url, f'CREATE DATABASE "{name}"'))
    try:
        yield to_asyncpg_url(admin_url, name)
    finally:
        run_blocking(lambda: _execute(admin_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture
def postgres_database(postgres_url: str) -> Iterator[str]:
    """A fresh, uniquely named database; yields its ``postgresql+asyncpg://`` URL; dropped afterwards."""
    with temporary_database(postgres_url) as url:
        yield url
