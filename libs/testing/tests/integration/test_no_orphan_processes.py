"""Servers the harness starts are gone when the pytest session ends (checked in the process table)."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it is gone for our purposes once it is not running.
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split(") ", 1)[1][0] != "Z"


def _group_members(pgid: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().split(") ", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                members.append(int(entry.name))
    return members


@pytest.mark.slow
def test_session_end_stops_every_started_server(pytester: pytest.Pytester, monkeypatch, tmp_path) -> None:
    for name in ("POSTGRES_URL", "NATS_URL", "MONGODB_URL"):
        monkeypatch.delenv(name, raising=False)
    # pytester points HOME at a temp dir: keep using the real mongoeco venv cache and pyenv.
    real_home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    monkeypatch.setenv("XDG_CACHE_HOME", os.environ.get("XDG_CACHE_HOME", str(real_home / ".cache")))
    monkeypatch.setenv("PYENV_ROOT", os.environ.get("PYENV_ROOT", str(real_home / ".pyenv")))
    pids_file = tmp_path / "pids.txt"
    monkeypatch.setenv("STOCKADE_TEST_PIDS_FILE", str(pids_file))
    pytester.makeini("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = session\n")
    pytester.makepyfile(
        test_servers="""
        import os
        from pathlib import Path

        from stockade.testing.ports import port_open

        def _note(pid):
            with open(os.environ["STOCKADE_TEST_PIDS_FILE"], "a") as f:
                f.write(f"{pid}\\n")

        def test_start_servers(request, nats_url, postgres_url, mongodb_url, nats_server_factory):
            from stockade.testing.report import report_of

            extra = nats_server_factory("# no extra config\\n")
            _note(extra.process.pid)
            records = report_of(request.config).records
            for server in ("nats", "postgres", "mongo"):
                assert records[server].pid is not None, records[server]
                _note(records[server].pid)
            for url in (nats_url, postgres_url):
                port = int(url.rsplit(":", 1)[1].split("/")[0])
                assert port_open("127.0.0.1", port)
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    pids = [int(line) for line in pids_file.read_text().split()]
    assert len(pids) == 4  # the factory's server, NATS, PostgreSQL (postmaster), mongoeco
    assert [pid for pid in pids if _alive(pid)] == []
    assert [pid for pid in pids if _group_members(pid)] == []


def test_servers_die_with_a_killed_test_process(tmp_path) -> None:
    # pytest killed with SIGKILL runs no teardown: the parent-death signal must still stop the server.
    import subprocess
    import sys
    import time

    script = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from stockade.testing.processes import ManagedProcess\n"
        f"p = ManagedProcess(['sleep', '120'], log_path=Path({str(tmp_path / 'log')!r}), die_with_parent=True)\n"
        "print(p.pid, flush=True)\n"
        "time.sleep(120)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    assert _alive(child)
    parent.kill()
    parent.wait()
    for _ in range(100):
        if not _alive(child):
            break
        time.sleep(0.05)
    assert not _alive(child)
