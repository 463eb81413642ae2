"""``stockade up``'s NATS: the accounts, users and permissions of deploy/nats, with generated passwords.

The two files of deploy/nats ship inside this package (``nats_conf/``, kept identical by a test), so the embedded
stack runs the very permissions of docker-compose and Kubernetes: each service as its own user, each agent of
agents.conf as its own user in the AGENTS account. Only the listen address, the store directory and the
monitoring port (none) differ.

Passwords are generated once per state directory and kept in ``<state>/nats/credentials.json`` (0600, the
directory 0700); nats-server and each service get theirs through the environment, never on a command line.
``<state>/nats/agents.env`` holds each agent's ``NATS_AGENT_<ID>_PASSWORD`` for running agents by hand.

The agents work for the demo project: each is granted its ``prompt.published.v1.<project>`` and
``policy.published.v1.<project>`` (push refresh of prompts and of the guardrail policy), as
an operator adds a project to an agent in agents.conf. The projects are kept in ``<state>/nats/projects.json``.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import secrets
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from stockade.contracts import subjects

SERVICE_USERS = ("prompt-api", "model-api", "guardrail-ingest", "trust-broker")
_VARIABLE = re.compile(r"\$(NATS_[A-Z0-9_]+_PASSWORD)")


def shipped(name: str) -> str:
    """The text of ``nats-server.conf`` or ``agents.conf`` (identical to deploy/nats)."""
    return resources.files("stockade.cli").joinpath("nats_conf", name).read_text(encoding="utf-8")


def user_of(variable: str) -> str:
    """``NATS_AGENT_PLANNER_PASSWORD`` -> ``planner``; ``NATS_MODEL_API_PASSWORD`` -> ``model-api``."""
    name = variable.removeprefix("NATS_").removesuffix("_PASSWORD").lower()
    return name.removeprefix("agent_") if name.startswith("agent_") else name.replace("_", "-")


def password_variables() -> list[str]:
    text = shipped("nats-server.conf") + shipped("agents.conf")
    return sorted(set(_VARIABLE.findall(text)))


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class NatsAuth:
    """The generated configuration and the password of every user (by user name)."""

    config_path: Path
    passwords: dict[str, str]
    variables: dict[str, str]  # NATS_..._PASSWORD -> password, nats-server's environment

    def service_env(self, prefix: str, user: str) -> dict[str, str]:
        """``<PREFIX>NATS__USER`` and ``__PASSWORD`` of a service."""
        return {f"{prefix}NATS__USER": user, f"{prefix}NATS__PASSWORD": self.passwords[user]}

    @property
    def agents(self) -> list[str]:
        return sorted(u for u in self.passwords if u not in SERVICE_USERS)


def _private_dir(path: Path) -> Path:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.chmod(0o700)
    return path


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    path.chmod(0o600)


def _passwords(directory: Path) -> dict[str, str]:
    """Every user's password: kept from an earlier start, new ones for users added since. NATS expands ``$VAR``
    in its config, so a password starts with letters (a leading digit would stop the server)."""
    path = directory / "credentials.json"
    known: dict[str, str] = {}
    if path.exists():
        loaded = json.loads(path.read_text(encoding="utf-8"))
        known = {str(k): str(v) for k, v in loaded.items()} if isinstance(loaded, dict) else {}
    wanted = {user_of(v) for v in password_variables()}
    passwords = {
        u: known.get(u) or "pw" + secrets.token_urlsafe(24).replace("-", "x") for u in sorted(wanted)
    }
    if passwords != known:
        _write_private(path, json.dumps(passwords, indent=2) + "\n")
    return passwords


def agents_conf(projects: list[str]) -> str:
    """The shipped agents.conf with every agent granted the events of ``projects``."""
    text = shipped("agents.conf")
    grants = "".join(
        f'"{subjects.prompt_published(p)}", "{subjects.policy_published(p)}", ' for p in projects
    )
    return re.sub(r'("agent\.[A-Za-z0-9_-]+\.inbox", )', lambda m: m.group(1) + grants, text)


def _projects(directory: Path, projects: list[str] | None) -> list[str]:
    path = directory / "projects.json"
    if projects is None:
        if not path.exists():
            return []
        loaded = json.loads(path.read_text(encoding="utf-8"))
        return [str(p) for p in loaded] if isinstance(loaded, list) else []
    _write_private(path, json.dumps(projects) + "\n")
    return projects


def prepare(state_dir: Path, host: str, port: int, projects: list[str] | None = None) -> NatsAuth:
    """Write ``<state>/nats/nats.conf`` (deploy/nats's accounts and permissions) and the credentials; the
    agents work for ``projects`` (None: those of the last start)."""
    directory = _private_dir(state_dir / "nats")
    passwords = _passwords(directory)
    agent_projects = _projects(directory, projects)
    text = shipped("nats-server.conf")
    replacements = {
        "listen: 0.0.0.0:4222": f"listen: {json.dumps(f'{host}:{port}')}",
        "http: 0.0.0.0:8222": "",  # no monitoring port: the stack probes over NATS
        "store_dir: /data/jetstream": f"store_dir: {json.dumps(str((directory / 'jetstream').resolve()))}",
    }
    for old, new in replacements.items():
        if old not in text:
            raise RuntimeError(f"the shipped nats-server.conf no longer contains {old!r}")
        text = text.replace(old, new)
    config = directory / "nats.conf"
    _write_private(directory / "agents.conf", agents_conf(agent_projects))
    _write_private(config, text)
    variables = {v: passwords[user_of(v)] for v in password_variables()}
    env_lines = [f"{v}={p}" for v, p in variables.items() if v.startswith("NATS_AGENT_")]
    _write_private(directory / "agents.env", "\n".join(env_lines) + "\n")
    return NatsAuth(config, passwords, variables)
