"""Shared builders of the agent-trust tests: a controllable clock and a small registry with keys."""

from __future__ import annotations

from typing import Any

import pytest

from stockade.guardrails.trust import AgentTrustEnforcer, TrustConfig
from stockade.guardrails.trust.loading import trust_config_from_dict

SECRETS = {
    "planner": {"k1": "p" * 32, "k2": "P" * 40},
    "executor": {"k1": "e" * 32},
    "intern": {"k1": "i" * 32},
    "root": {"k1": "r" * 32},
}


class FakeClock:
    """Wall clock the tests move by hand (Unix seconds)."""

    def __init__(self, now: float = 1_795_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def trust_config(**policy: Any) -> TrustConfig:
    def keys(agent: str) -> list[dict[str, str]]:
        return [{"id": kid, "secret": s} for kid, s in SECRETS[agent].items()]

    return trust_config_from_dict(
        {
            "policy": {
                "min_sender_trust": "restricted",
                "privileged_capabilities": ["payments.transfer"],
                **policy,
            },
            "attestation": {"freshness_window_s": 30, "clock_skew_s": 2},
            "agents": [
                {
                    "id": "planner",
                    "trust": "trusted",
                    "capabilities": ["summarize", "payments.transfer"],
                    "keys": keys("planner"),
                },
                {
                    "id": "executor",
                    "trust": "restricted",
                    "capabilities": ["summarize"],
                    "keys": keys("executor"),
                },
                {"id": "intern", "trust": "untrusted", "capabilities": ["summarize"], "keys": keys("intern")},
                {
                    "id": "root",
                    "trust": "privileged",
                    "capabilities": ["payments.transfer"],
                    "keys": keys("root"),
                },
            ],
        }
    )


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def enforcer(clock: FakeClock) -> AgentTrustEnforcer:
    return AgentTrustEnforcer.from_config(trust_config(), receiver="executor", clock=clock)


@pytest.fixture
def make_trust_config() -> Any:
    """The builder :func:`trust_config` (tests import nothing from conftest under importlib mode)."""
    return trust_config
