"""ClickHouse: ``CLICKHOUSE_URL`` (a real server over HTTP), else embedded chdb in a temp dir."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from stockade.testing.report import ServerRecord, display_url, report_of

if TYPE_CHECKING:
    from clickhouse_connect.driver.client import Client

__all__ = ["chdb_dsn_for_this_process", "clickhouse_client", "clickhouse_dsn"]

HOW_TO = (
    "set CLICKHOUSE_URL=http://user:password@host:8123 for a real server, or install chdb "
    "(pip install chdb clickhouse-connect). Debian's clickhouse-server 18.16 is too old for clickhouse-connect"
)

# chdb runs one engine per process on one path: every fixture user in this process shares it.
_CHDB_DIRS: dict[int, Path] = {}


def chdb_dsn_for_this_process() -> str:
    """``chdb:///<temp dir>``, the same for every caller in this process (chdb allows one path)."""
    pid = os.getpid()
    if pid not in _CHDB_DIRS:
        _CHDB_DIRS[pid] = Path(tempfile.mkdtemp(prefix="stockade-chdb-"))
    return f"chdb://{_CHDB_DIRS[pid]}"


@pytest.fixture(scope="session")
def clickhouse_dsn(request: pytest.FixtureRequest) -> Iterator[str]:
    """DSN for ``clickhouse_connect.get_client(dsn=...)``: ``CLICKHOUSE_URL`` or ``chdb:///<dir>``.

    With chdb, open all clients on this DSN: one chdb path per process, a second path fails.
    """
    env_url = os.environ.get("CLICKHOUSE_URL")
    if env_url:
        yield env_url
        return
    try:
        import chdb  # noqa: F401
    except ImportError:
        report_of(request.config).unavailable(
            "clickhouse", "chdb", "chdb not installed", f"chdb is not installed; {HOW_TO}"
        )
    dsn = chdb_dsn_for_this_process()
    try:
        yield dsn
    finally:
        directory = _CHDB_DIRS.pop(os.getpid(), None)
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="session")
def clickhouse_client(request: pytest.FixtureRequest, clickhouse_dsn: str) -> Iterator[Client]:
    """A clickhouse-connect client (sync) on ``clickhouse_dsn``; use ``unique_name`` for table names."""
    import clickhouse_connect

    report = report_of(request.config)
    from_env = not clickhouse_dsn.startswith("chdb:")
    origin = "env CLICKHOUSE_URL" if from_env else "embedded chdb"
    try:
        client = clickhouse_connect.get_client(dsn=clickhouse_dsn)
    except Exception as exc:
        where = display_url(clickhouse_dsn)
        report.unavailable(
            "clickhouse", origin, type(exc).__name__, f"cannot connect to {where}: {exc}; {HOW_TO}"
        )
    address = display_url(clickhouse_dsn) if from_env else clickhouse_dsn
    report.record("clickhouse", ServerRecord(origin, client.server_version, address))
    try:
        yield client
    finally:
        client.close()
