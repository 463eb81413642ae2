"""Side virtualenvs: a tool that needs a newer Python than the workspace's runs in a cached venv of its own.

Used for mongoeco (Python >= 3.13) and the agentskills-http client (Python >= 3.12). The venv lives under
``~/.cache/stockade/<name>`` and is built once (a file lock keeps concurrent runs from racing).
"""

from __future__ import annotations

import fcntl
import glob
import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

__all__ = ["cached_venv", "find_python"]


def _version_key(path: str) -> list[int]:
    return [int(x) for x in re.findall(r"\d+", Path(path).parent.parent.name)]


def find_python(min_minor: int, env_var: str | None = None) -> Path | None:
    """A Python 3.<min_minor> or newer: ``env_var`` if set, then pyenv's versions, then PATH; else None."""
    if env_var and (explicit := os.environ.get(env_var)):
        return Path(explicit)
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    found = [
        c
        for c in glob.glob(str(pyenv_root / "versions" / "3.*" / "bin" / "python"))
        if (_version_key(c) or [0, 0])[:2] >= [3, min_minor] and os.access(c, os.X_OK)
    ]
    for candidate in sorted(found, key=_version_key, reverse=True):
        return Path(candidate)
    for minor in range(min_minor + 3, min_minor - 1, -1):
        if on_path := shutil.which(f"python3.{minor}"):
            return Path(on_path)
    return None


def cached_venv(name: str, python: Path, requirements: Sequence[str]) -> Path:
    """Create or reuse ``~/.cache/stockade/<name>`` with ``requirements`` installed; return its python."""
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "stockade"
    venv = cache / name
    venv_python = venv / "bin" / "python"
    done = venv / ".stockade-installed"
    wanted = "\n".join(requirements)
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists() and venv_python.exists() and done.read_text() == wanted:
            return venv_python
        _run([str(python), "-m", "venv", "--clear", str(venv)])
        _run(
            [
                str(venv_python),
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                *requirements,
            ]
        )
        done.write_text(wanted)
    return venv_python


def _run(argv: list[str]) -> None:
    result = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=900)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {(result.stderr or result.stdout).strip()[-2000:]}")
