"""Write the ``.env`` file docker compose reads: a random value for every secret ``docker-compose.yml`` requires.

``docker-compose.yml`` writes each password and HMAC secret as ``${NAME:?message}``, so compose refuses to start
while one is unset (there are no public defaults). This module finds those names in the compose file and appends
a fresh random value for each one the ``.env`` file does not set yet; values already there are kept, so it is
safe to run before every ``docker compose up``. Values are 48 hex digits after a letter: URL-safe (they go into
database URLs), accepted by nats-server's ``$VAR`` (which must not start with a digit) and 24 random bytes from
:mod:`secrets`. A new file is created readable by its owner only (0600).

Standard library only: ``python3 apps/cli/src/stockade/cli/compose_env.py`` works without installing Stockade;
``stockade compose-env`` is the same.
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

REQUIRED = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*):\?")
ASSIGNMENT = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=")


@dataclass(frozen=True)
class EnvResult:
    path: Path
    created: bool
    added: list[str]
    kept: list[str]


def required_variables(compose_text: str) -> list[str]:
    """The names compose refuses to start without (``${NAME:?...}``), in order of first use; comment lines are
    skipped."""
    lines = (line for line in compose_text.splitlines() if not line.lstrip().startswith("#"))
    return list(dict.fromkeys(name for line in lines for name in REQUIRED.findall(line)))


def assigned_variables(env_text: str) -> set[str]:
    """Names an ``.env`` file sets (comments and blank lines skipped)."""
    names = set()
    for line in env_text.splitlines():
        if line.lstrip().startswith("#"):
            continue
        match = ASSIGNMENT.match(line)
        if match:
            names.add(match.group(1))
    return names


def new_secret() -> str:
    return "s" + secrets.token_hex(24)


def write_env(compose_file: Path, env_file: Path) -> EnvResult:
    """Append a random value to ``env_file`` for each required variable it lacks; create it (0600) if missing."""
    required = required_variables(compose_file.read_text(encoding="utf-8"))
    created = not env_file.exists()
    existing = "" if created else env_file.read_text(encoding="utf-8")
    have = assigned_variables(existing)
    missing = [name for name in required if name not in have]
    kept = [name for name in required if name in have]
    if missing:
        stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        lines = [f"# random secrets for {compose_file.name}, written by stockade compose-env on {stamp}"]
        lines += [f"{name}={new_secret()}" for name in missing]
        block = ("\n" if existing and not existing.endswith("\n") else "") + "\n".join(lines) + "\n"
        fd = os.open(env_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as out:
            out.write(block)
    return EnvResult(env_file, created, missing, kept)


def report(result: EnvResult) -> str:
    """What happened, without any value."""
    if not result.added:
        return f"{result.path}: all {len(result.kept)} secrets already set; nothing changed"
    verb = "created" if result.created else "updated"
    return (
        f"{result.path}: {verb}; {len(result.added)} new random secret(s): {', '.join(result.added)}"
        + (f"; {len(result.kept)} kept" if result.kept else "")
        + ". Keep this file private and out of version control."
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--compose-file", type=Path, default=Path("docker-compose.yml"))
    parser.add_argument("--env-file", type=Path, default=None, help="default: .env next to the compose file")
    args = parser.parse_args(argv)
    compose_file: Path = args.compose_file
    if not compose_file.is_file():
        print(
            f"{compose_file}: no such file (run from the repository root or pass --compose-file)",
            file=sys.stderr,
        )
        return 2
    env_file = args.env_file or compose_file.with_name(".env")
    print(report(write_env(compose_file, env_file)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
