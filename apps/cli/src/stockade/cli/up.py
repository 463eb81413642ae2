"""``stockade up``: start the embedded stack, print where everything is, stop it cleanly on Ctrl-C/SIGTERM."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from types import FrameType

import httpx

from stockade.cli import demo_content, progress
from stockade.cli.demo import DemoInfo, prepare_database, write_guardrails_config
from stockade.cli.nats_auth import is_loopback
from stockade.cli.processes import Child, wait_any_exit
from stockade.cli.stack import (
    StackConfig,
    StartupError,
    check_ports,
    start_nats,
    start_service,
    wait_healthy,
)

SERVICES = ("prompt-api", "model-api", "guardrail-ingest", "toxicity-classifier", "trust-broker")


def run_up(cfg: StackConfig) -> int:
    stop_requested = [False]
    children: list[Child] = []

    def request_stop(signum: int, _frame: FrameType | None) -> None:
        if not stop_requested[0]:
            print(f"\n{signal.Signals(signum).name} received: stopping the stack...", flush=True)
        stop_requested[0] = True
        raise KeyboardInterrupt  # interrupts start-up waits as well

    old = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    code = 0
    try:
        code = _start_and_wait(cfg, children, stop_requested)
    except KeyboardInterrupt:
        code = 0
    except StartupError as exc:
        progress.fail("stockade up", str(exc))
        code = 1
    finally:
        for sig in old:  # the shutdown itself must not be interrupted
            signal.signal(sig, signal.SIG_IGN)
        _stop_all(children)
        for sig, handler in old.items():
            signal.signal(sig, handler)
    return code


def prepare_state_dir(cfg: StackConfig) -> None:
    """The state directory holds the database (password and key hashes), the demo key and the NATS passwords:
    readable by its owner only (0700, the database 0600), whatever the umask (review finding L8)."""
    cfg.state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    cfg.state_dir.chmod(0o700)
    cfg.db_path.touch(mode=0o600)
    cfg.db_path.chmod(0o600)


def _start_and_wait(cfg: StackConfig, children: list[Child], stop_requested: list[bool]) -> int:
    prepare_state_dir(cfg)
    print(f"Stockade embedded stack in {cfg.state_dir} (logs in {cfg.log_dir})", flush=True)
    check_ports(cfg)
    if not is_loopback(cfg.host):
        progress.info(
            f"WARNING: --host {cfg.host} is not a loopback address: the console, the APIs and NATS accept "
            "connections from the network. NATS requires the generated passwords "
            f"({cfg.state_dir / 'nats'}), but the demo sign-in and keys printed below work for anyone who can "
            "reach these ports, over plain HTTP. Use --host 127.0.0.1 unless that is what you want."
        )
    with progress.starting("database", f"SQLite {cfg.db_path} (migrate, seed demo data if empty)"):
        demo = prepare_database(cfg.state_dir, cfg.db_url)
    if demo is not None and cfg.audit_project_id is None:
        cfg.audit_project_id = demo.project_id  # the demo agents work for it (NATS grants, audit trail)
    with progress.starting(
        "nats-server",
        f"{cfg.nats_url}, deploy/nats users and permissions, JetStream in {cfg.state_dir / 'nats'}",
    ):
        children.append(start_nats(cfg))
    write_guardrails_config(cfg.guardrails_config_path, cfg.toxicity_url)
    started: dict[str, Child] = {}
    for name in SERVICES:
        progress.info(f"starting {name}")
        started[name] = start_service(cfg, name)
        children.append(started[name])
    asyncio.run(wait_healthy(cfg, started))
    if demo is not None and cfg.demo:
        _seed_demo_content(cfg, demo)
    _print_summary(cfg, demo)
    crashed = wait_any_exit(children, stop_requested)
    if crashed is not None:
        progress.fail(
            crashed.name, f"exited with code {crashed.proc.returncode}; last lines:\n{crashed.log_tail()}"
        )
        return 1
    return 0


def _seed_demo_content(cfg: StackConfig, demo: DemoInfo) -> None:
    """Once per state directory: sample prompts, a skill, a guardrail policy, proposals and guardrail runs,
    through the APIs."""
    marker = cfg.state_dir / demo_content.MARKER
    if marker.exists():
        return

    async def seed() -> None:
        base = f"http://{cfg.host}"
        async with (
            httpx.AsyncClient(base_url=f"{base}:{cfg.prompt_port}", timeout=10) as prompt_api,
            httpx.AsyncClient(
                base_url=f"{base}:{cfg.ingest_port}", timeout=10, headers={"X-API-Key": demo.ingest_key}
            ) as ingest,
        ):
            await demo_content.seed_prompts(prompt_api, demo.api_key, demo.project_id, demo.review_project_id)
            await demo_content.seed_policies(
                prompt_api, demo.api_key, demo.project_id, demo.review_project_id
            )
            await demo_content.seed_runs(ingest, demo.project_id)

    try:
        with progress.starting(
            "demo content", "a prompt and a guardrail policy (two versions each), a skill, proposals, runs"
        ):
            asyncio.run(seed())
    except (httpx.HTTPError, RuntimeError, KeyError, ValueError) as exc:
        progress.info(f"demo content not seeded ({exc}); the stack runs without it")
        return
    marker.write_text("seeded\n")


def _print_summary(cfg: StackConfig, demo: DemoInfo | None) -> None:
    print("\nStockade is up.", flush=True)
    for name, (_, _, port) in cfg.http_services().items():
        print(f"  {name:<19} http://{cfg.host}:{port}")
    print(
        f"  {'trust-broker':<19} {cfg.nats_url} (publish to trust.submit.<receiver>; "
        f"metrics http://{cfg.host}:{cfg.trust_port}/metrics)"
    )
    print(f"  {'console':<19} http://{cfg.host}:{cfg.model_port}/")
    if cfg.nats_auth is not None:
        agents = ", ".join(cfg.nats_auth.agents)
        print(
            f"  {'NATS users':<19} one per service and per agent ({agents}); agents' passwords in "
            f"{cfg.nats_auth.config_path.parent / 'agents.env'}"
        )
    print(f"  {'guardrails config':<19} {cfg.guardrails_config_path} (toxicity check -> {cfg.toxicity_url})")
    if demo:
        print(f"\n  demo API key        {demo.api_key}")
        print(f"  demo project        {demo.project_id}")
        if demo.console_password:
            print(f"  console sign-in     {demo.user} / {demo.console_password}")
        if demo.ingest_key:  # guardrail-ingest takes run events only with a key of their project
            print(f"  demo ingest key     STOCKADE_INGEST_KEY={demo.ingest_key}")
        if cfg.demo:
            print(
                f"  prompts and skills  http://{cfg.host}:{cfg.model_port}/projects (signed in, no key to paste)"
            )
            policy = f"http://{cfg.host}:{cfg.model_port}/projects/{demo.project_id}/policies/support-bot"
            print(
                f"  demo agent          `stockade demo-agent` in another terminal; its guardrail policy: {policy}"
            )
        url = f"http://{cfg.host}:{cfg.prompt_port}/prompts?project_id={demo.project_id}"
        print(f"  try:  curl -H 'X-API-Key: {demo.api_key}' '{url}'")
    print("\nPress Ctrl-C to stop.", flush=True)


def _stop_all(children: list[Child]) -> None:
    if not children:
        return
    for child in reversed(children):  # services first, NATS last (they drain into it)
        if child.alive:
            progress.info(f"stopping {child.name}")
        code = child.stop()
        if code not in (0, -15, 143, None):
            progress.info(f"{child.name} exited with code {code} (log: {child.log_path})")
    print("stopped cleanly.", flush=True)


def default_state_dir() -> Path:
    return Path.cwd() / ".stockade"
