"""Child processes of ``stockade up``: started in their own session, die with the parent, stopped in order."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # runs in the child between fork and exec (Linux)
    os.setsid()
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL("libc.so.6", use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        except OSError:
            pass


@dataclass
class Child:
    name: str
    proc: subprocess.Popen[bytes]
    log_path: Path

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, timeout_s: float = 15.0) -> int:
        """SIGTERM (graceful drain), then SIGKILL after ``timeout_s``. Returns the exit code."""
        if self.alive:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(text[-lines:])


def spawn(name: str, argv: Sequence[str], *, env: dict[str, str], log_dir: Path, cwd: Path) -> Child:
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"{name}.log"
    with log_path.open("ab") as log_file:
        proc = subprocess.Popen(
            list(argv),
            stdout=log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=cwd,
            preexec_fn=_die_with_parent,
        )
    return Child(name=name, proc=proc, log_path=log_path)


def wait_any_exit(children: Sequence[Child], stop_requested: list[bool], poll_s: float = 0.2) -> Child | None:
    """Block until a stop is requested (returns None) or a child exits (returns it)."""
    while not stop_requested[0]:
        for child in children:
            if not child.alive:
                return child
        time.sleep(poll_s)
    return None
