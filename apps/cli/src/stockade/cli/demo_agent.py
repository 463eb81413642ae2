"""``stockade demo-agent``: a demo support agent on the demo project's guardrail policy (issue 31).

Beside a running ``stockade up``: it builds ``GuardrailSystem.from_platform(<demo project>, "support-bot")`` with
the demo key, follows the policy's activations by push (as the demo agent ``planner`` of ``deploy/nats``), and
every few seconds checks a support message holding an e-mail address in a run of its own, stored by
guardrail-ingest with the demo project's ingest key. Each line it prints names the decision and the policy
version that made it: publish a stricter version in the console and the next run shows it, without a restart;
the console's run pages show the same.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stockade.cli.demo_content import POLICY

MESSAGE = "Hi, I am Jane Doe (jane.doe@example.com): where is my refund for order 1234?"
AGENT_ID = "demo-support-agent"


def build_agent(state_dir: Path, host: str, ports: dict[str, int], *, store: bool = True) -> Any:
    """The demo agent's GuardrailSystem (blocking: reads the active version from prompt-api)."""
    from stockade.client import ClientSettings, PushSettings
    from stockade.guardrails import GuardrailSystem

    demo = json.loads((state_dir / "demo.json").read_text())
    push = PushSettings(nats_url=_nats_url(state_dir, host, ports["nats"]), project_ids=(demo["project_id"],))
    storage: dict[str, Any] = {"enabled": False}
    if store:
        storage = {
            "enabled": True,
            "backend_url": f"http://{host}:{ports['ingest']}",
            "api_key": demo["ingest_key"],
        }
    system = GuardrailSystem.from_platform(
        demo["project_id"],
        POLICY,
        api_key=demo["api_key"],
        settings=ClientSettings(base_url=f"http://{host}:{ports['prompt']}", push=push),
        cache_dir=state_dir / "policies",
        storage=storage,
    )
    system.link_arms(demo["project_id"], agent_id=AGENT_ID, environment="demo")
    return system


def _nats_url(state_dir: Path, host: str, port: int) -> str:
    """As the demo agent ``planner`` (its password in ``<state>/nats/agents.env``), else anonymous."""
    env = state_dir / "nats" / "agents.env"
    if env.exists():
        for line in env.read_text().splitlines():
            name, _, password = line.partition("=")
            if name == "NATS_AGENT_PLANNER_PASSWORD" and password:
                return f"nats://planner:{password}@{host}:{port}"
    return f"nats://{host}:{port}"


async def run_agent(system: Any, runs: int, every_s: float, say: Callable[[str], None] = print) -> list[str]:
    """``runs`` runs (0: until stopped), ``every_s`` apart; returns the lines it printed."""
    lines: list[str] = []
    n = 0
    while runs <= 0 or n < runs:
        n += 1
        run_id = system.begin_run()
        verdict = await system.check_input(MESSAGE, session_id="demo-session")
        ref = system.policy_ref
        flushed = await system.end_run(run_id)
        policy = f"{ref.name} v{ref.version}" if ref else "no platform policy"
        line = f"run {run_id[:8]}: {verdict.action.value} by {policy} (events {flushed.status.value})"
        lines.append(line)
        say(line)
        if runs <= 0 or n < runs:
            await asyncio.sleep(every_s)
    return lines
