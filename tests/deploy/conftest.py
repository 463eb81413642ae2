"""A real nats-server running the shipped deploy/nats configuration, for the permission and agent-bus tests.

Substitutions, and only these: the monitoring port (a free one instead of 8222), the JetStream store directory
(the harness passes its own with ``-sd``, which may not appear twice) and ``include agents.conf`` replaced by
the text of the real agents.conf (the harness writes the config into a temporary directory, where the include
would not resolve), with what an operator adds per agent: the projects it works for (:data:`AGENT_PROJECTS`,
``prompt.published.v1.<project>``). Every password comes through the environment variable compose sets.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator
from pathlib import Path

import nats
import pytest
from nats.aio.client import Client

from stockade.testing.nats import NatsServer, NatsServerFactory
from stockade.testing.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
NATS_DIR = ROOT / "deploy" / "nats"
AGENT_PROJECTS = {"planner": "p1", "executor": "p2"}
"""The project each test agent works for: agents.conf grants its prompt.published.v1.<project> (deploy/nats
README, "Adding an agent")."""


def with_projects(agents_conf: str) -> str:
    for agent, project in AGENT_PROJECTS.items():
        inbox = f'"agent.{agent}.inbox", '
        assert inbox in agents_conf
        agents_conf = agents_conf.replace(inbox, inbox + f'"prompt.published.v1.{project}", ')
    return agents_conf


def password_variables(text: str) -> list[str]:
    return sorted(set(re.findall(r"\$(NATS_[A-Z0-9_]+_PASSWORD)", text)))


def user_of(variable: str) -> str:
    """``NATS_AGENT_PLANNER_PASSWORD`` -> ``planner``; ``NATS_MODEL_API_PASSWORD`` -> ``model-api``."""
    name = variable.removeprefix("NATS_").removesuffix("_PASSWORD").lower()
    return name.removeprefix("agent_") if name.startswith("agent_") else name.replace("_", "-")


class Deployment:
    """The server started from the real files, and a way to connect as any of its users."""

    def __init__(self, server: NatsServer, passwords: dict[str, str], monitor_port: int) -> None:
        self.server = server
        self.passwords = passwords
        self.monitor_port = monitor_port

    @property
    def url(self) -> str:
        return self.server.url

    async def connect(self, user: str, errors: list[str], **options: object) -> Client:
        async def on_error(exc: Exception) -> None:
            errors.append(str(exc))

        return await nats.connect(
            self.server.url,
            user=user,
            password=self.passwords[user],
            error_cb=on_error,
            allow_reconnect=False,
            connect_timeout=5,
            **options,  # type: ignore[arg-type]
        )


@pytest.fixture(scope="session")
def deployment(nats_server_factory: NatsServerFactory) -> Iterator[Deployment]:
    text = (NATS_DIR / "nats-server.conf").read_text()
    monitor_port = free_port()
    for expected in ("include agents.conf", "http: 0.0.0.0:8222", "store_dir: /data/jetstream"):
        assert expected in text
    text = text.replace("include agents.conf", with_projects((NATS_DIR / "agents.conf").read_text()))
    text = text.replace("store_dir: /data/jetstream", "")
    text = text.replace("http: 0.0.0.0:8222", f"http: 127.0.0.1:{monitor_port}")
    # NATS expands $VAR values: a password must start with a letter (ENVIRONMENT.md, "Known traps").
    passwords = {user_of(v): "pw" + secrets.token_hex(16) for v in password_variables(text)}
    with pytest.MonkeyPatch.context() as env:
        for variable in password_variables(text):
            env.setenv(variable, passwords[user_of(variable)])
        server = nats_server_factory(text)  # the child process inherits the passwords
    yield Deployment(server, passwords, monitor_port)
    server.stop()
