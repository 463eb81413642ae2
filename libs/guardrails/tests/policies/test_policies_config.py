"""Policies configuration: YAML, validation errors naming the bad key."""

from __future__ import annotations

import pytest

from stockade.guardrails import ConfigError, load_config


def test_policies_load_from_yaml_string() -> None:
    cfg = load_config(
        """
guardrails:
  policies:
    token_budget: {per_request: 1000, per_run: 5000, block_on_exceeded: false}
    tools:
      roles: {analyst: [search, "db.*"]}
      deny: [shell]
      sensitive: {transfer_funds: {approvers: [alice], max_age_seconds: 60}}
    rate_limits: {requests_per_session: 10, tool_calls_per_session: 5, tool_execution_seconds: 30, backend: nats}
"""
    )
    p = cfg.guardrails.policies
    assert p.token_budget.per_request == 1000 and p.token_budget.block_on_exceeded is False
    assert p.tools.roles["analyst"] == ["search", "db.*"]
    assert p.tools.sensitive["transfer_funds"].approvers == ["alice"]
    assert p.rate_limits.backend == "nats" and p.rate_limits.tool_execution_seconds == 30


@pytest.mark.parametrize(
    ("policies", "bad_key"),
    [
        ({"token_budget": {"per_request": -5}}, "guardrails.policies.token_budget.per_request"),
        ({"token_budget": {"per_requests": 5}}, "guardrails.policies.token_budget.per_requests"),
        ({"rate_limits": {"backend": "redis"}}, "guardrails.policies.rate_limits.backend"),
        (
            {"tools": {"sensitive": {"x": {"max_age_seconds": 0}}}},
            "guardrails.policies.tools.sensitive.x.max_age",
        ),
    ],
)
def test_bad_policy_key_is_named(policies: dict[str, object], bad_key: str) -> None:
    with pytest.raises(ConfigError, match=bad_key.replace(".", r"\.")):
        load_config({"guardrails": {"policies": policies}})


def test_per_run_smaller_than_per_request_is_rejected() -> None:
    with pytest.raises(ConfigError, match="per_run"):
        load_config({"guardrails": {"policies": {"token_budget": {"per_request": 100, "per_run": 50}}}})
