"""Trust-broker tests: a trust registry with four agents, and the deploy/nats permission configuration."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
NATS_DIR = REPO / "deploy" / "nats"

AGENT_SECRETS = {"planner": "p" * 32, "executor": "e" * 32, "intern": "i" * 32, "treasurer": "t" * 32}


def trust_document(**changes: Any) -> dict[str, Any]:
    agents = [
        {"id": "planner", "trust": "trusted", "capabilities": ["summarize", "payments.transfer"]},
        {"id": "executor", "trust": "restricted", "capabilities": ["summarize"]},
        {"id": "intern", "trust": "untrusted", "capabilities": ["summarize"]},
        {"id": "treasurer", "trust": "privileged", "capabilities": ["payments.transfer"]},
    ]
    for agent in agents:
        agent["keys"] = [{"id": "k1", "secret": AGENT_SECRETS[agent["id"]]}]
        agent.update(changes.get(agent["id"], {}))
    return {
        "guardrails": {
            "trust": {
                "policy": {
                    "min_sender_trust": "restricted",
                    "privileged_capabilities": ["payments.transfer"],
                },
                "attestation": {"freshness_window_s": 30, "clock_skew_s": 2},
                "agents": agents,
            }
        }
    }


@pytest.fixture
def trust_yaml(tmp_path: Path) -> Path:
    path = tmp_path / "trust.yaml"
    path.write_text(yaml.safe_dump(trust_document()))
    return path


@pytest.fixture
def write_trust_yaml() -> Any:
    def write(path: Path, **changes: Any) -> None:
        # Atomically, as a deployment swaps a mounted file: a broker's mtime watch that read a half-written
        # file failed, remembered that mtime, and missed the rest of a write finished in the same clock tick.
        staged = path.with_suffix(".staged")
        staged.write_text(yaml.safe_dump(trust_document(**changes)))
        staged.replace(path)

    return write


def nats_password(user: str) -> str:
    return f"test-password-{user}"


OBSERVER = """
      # test-only: reads every subject of the STOCKADE account (trust.rejected.v1) and sends commands.
      { user: observer, password: "%s", permissions: { publish: ">", subscribe: ">" } }
"""


def deploy_nats_config() -> str:
    """deploy/nats/nats-server.conf with agents.conf inlined, passwords defined, address/port/store left to the
    harness, plus a test-only observer user in the STOCKADE account."""
    text = (NATS_DIR / "nats-server.conf").read_text()
    text = text.replace("include agents.conf", (NATS_DIR / "agents.conf").read_text())
    text = re.sub(r"(?m)^\s*(listen|http|store_dir)\s*:.*$", "", text)
    text = text.replace("    users: [\n", "    users: [\n" + OBSERVER % nats_password("observer"), 1)
    variables = sorted(set(re.findall(r"\$(NATS_[A-Z_]+_PASSWORD)", text)))
    preamble = "".join(f'{v}: "{nats_password(_user_of(v))}"\n' for v in variables)
    return preamble + text


def _user_of(variable: str) -> str:
    name = variable.removeprefix("NATS_").removesuffix("_PASSWORD").lower()
    return name.removeprefix("agent_").replace("_", "-")


@pytest.fixture(scope="session")
def trust_nats(nats_server_factory: Any) -> Any:
    """A real nats-server running deploy/nats's configuration (accounts, users, permissions)."""
    return nats_server_factory(deploy_nats_config())


@pytest.fixture
def nats_password_of() -> Any:
    return nats_password
