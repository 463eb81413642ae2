"""Server processes started by the harness: own process group, log file, clean stop."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from stockade.testing.ports import wait_until

__all__ = ["ManagedProcess"]

_PR_SET_PDEATHSIG = 1


def _die_with_parent(sig: signal.Signals) -> Callable[[], None] | None:
    """A pre-exec hook that makes the child receive ``sig`` when its parent thread dies (Linux only)."""
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)  # loaded before fork: the hook itself only calls into it
    parent = os.getpid()

    def hook() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, int(sig))
        if os.getppid() != parent:  # the parent died before the signal was armed
            os._exit(1)

    return hook


class ManagedProcess:
    """A child process in its own session (process group), so stopping it leaves no orphans.

    Output goes to ``log_path``; :meth:`log_tail` gives the end of it for error messages.
    ``die_with_parent=True`` (Linux) also sends ``stop_signal`` to the process if the thread that started it
    dies, e.g. when pytest is killed and cannot run its teardown. The parent-death signal is set in the child
    before ``exec`` (so it is in force by the time the constructor returns, with no window in which a killed
    parent leaves an orphan), after any change of user (which would clear it). Only use it from a thread that
    lives as long as the process should (the main thread).
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        log_path: Path,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        user: str | None = None,
        stop_signal: signal.Signals = signal.SIGTERM,
        die_with_parent: bool = False,
    ) -> None:
        self.argv = [str(a) for a in argv]
        self.log_path = log_path
        self.stop_signal = stop_signal
        log_path.parent.mkdir(parents=True, exist_ok=True)
        group: int | None = None
        extra_groups: list[int] | None = None
        if user is not None:
            # Drop root: setuid/setgid in the child, no supplementary groups kept from root.
            group, extra_groups = _primary_group(user), []
        preexec = _die_with_parent(stop_signal) if die_with_parent else None
        with open(log_path, "ab") as log:
            self.popen = subprocess.Popen(
                self.argv,
                preexec_fn=preexec,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=cwd,
                start_new_session=True,
                user=user,
                group=group,
                extra_groups=extra_groups,
            )
        self.pid = self.popen.pid
        self.pgid = self.pid  # start_new_session: the child leads its own group

    def alive(self) -> bool:
        return self.popen.poll() is None

    def group_alive(self) -> bool:
        """True while any process of the group (the server or its children) still exists."""
        try:
            os.killpg(self.pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def stop(self, timeout: float = 15.0) -> None:
        """Signal the whole group, wait, then SIGKILL whatever is left. Idempotent."""
        if self.group_alive():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pgid, self.stop_signal)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(timeout=timeout)
            # Children of the server (e.g. PostgreSQL backends) may need a moment after the leader.
            wait_until(lambda: not self.group_alive(), timeout=5, interval=0.05)
            if self.group_alive():
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.pgid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=timeout)

    def log_tail(self, lines: int = 20) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


def _primary_group(user: str) -> int:
    import pwd

    return pwd.getpwnam(user).pw_gid
