"""Registry and keys from YAML or code; secrets from config, environment or files; errors name the key."""

import pytest

from stockade.guardrails import ConfigError, load_config
from stockade.guardrails.trust import (
    AgentIdentity,
    AgentRegistry,
    AgentTrustEnforcer,
    GuardrailPolicy,
    KeyRing,
    TrustLevel,
    trust_config_from_yaml,
)

YAML = """
guardrails:
  trust:
    policy:
      min_sender_trust: trusted
      privileged_capabilities: [db.drop]
    attestation: {freshness_window_s: 10, clock_skew_s: 1}
    agents:
      - id: planner
        trust: privileged
        capabilities: [db.drop, search]
        keys:
          - {id: new, secret_env: PLANNER_NEW}
          - {id: old, secret_file: SECRET_FILE}
      - id: reader
        trust: restricted
"""


def test_levels_are_ordered():
    order = [TrustLevel.UNTRUSTED, TrustLevel.RESTRICTED, TrustLevel.TRUSTED, TrustLevel.PRIVILEGED]
    for i, low in enumerate(order):
        for high in order[i:]:
            assert high.at_least(low)
        for higher in order[i + 1 :]:
            assert not low.at_least(higher)


def test_registry_from_yaml_and_full_config(tmp_path, monkeypatch):
    secret_file = tmp_path / "old.key"
    secret_file.write_text("o" * 32 + "\n")
    monkeypatch.setenv("PLANNER_NEW", "n" * 32)
    text = YAML.replace("SECRET_FILE", str(secret_file))

    registry = AgentRegistry.from_yaml(text)
    assert registry.get("planner") == AgentIdentity(
        agent_id="planner", trust_level=TrustLevel.PRIVILEGED, capabilities=frozenset({"db.drop", "search"})
    )
    assert registry.get("reader").trust_level is TrustLevel.RESTRICTED and "ghost" not in registry

    cfg = load_config(text).guardrails.trust
    assert cfg.policy.privileged_capabilities == frozenset({"db.drop"})
    keys = KeyRing.from_config(cfg)
    assert keys.secret("planner", "new") == b"n" * 32
    assert keys.secret("planner", "old") == b"o" * 32  # trailing newline of the file is cut
    assert keys.signing_key_id("planner") == "new"


def test_registry_in_code():
    registry = AgentRegistry([AgentIdentity(agent_id="a", trust_level="trusted", capabilities={"x"})])
    registry.register(AgentIdentity(agent_id="b"))
    assert registry.get("b").trust_level is TrustLevel.UNTRUSTED and len(registry) == 2
    with pytest.raises(ValueError, match="already registered"):
        registry.register(AgentIdentity(agent_id="a"))
    enforcer = AgentTrustEnforcer(GuardrailPolicy(), registry, verifier=None)  # type: ignore[arg-type]
    assert enforcer.registry.get("a").allows("x")


def test_an_agent_names_its_project_for_the_audit_trail():
    text = """
agents:
  - {id: payer, project: payments}
  - {id: loner}
"""
    registry = AgentRegistry.from_yaml(text)
    assert registry.get("payer").project == "payments" and registry.get("loner").project is None
    with pytest.raises(ConfigError, match="project"):
        trust_config_from_yaml("agents:\n  - {id: payer, project: ''}\n")


def test_missing_env_secret_names_the_key(monkeypatch):
    monkeypatch.delenv("PLANNER_NEW", raising=False)
    cfg = trust_config_from_yaml(YAML.replace("SECRET_FILE", "/nonexistent"))
    with pytest.raises(
        ConfigError, match=r"guardrails\.trust\.agents\.0\.keys\.0\.secret_env: .*PLANNER_NEW"
    ):
        KeyRing.from_config(cfg)


def test_unreadable_secret_file_names_the_key(monkeypatch):
    monkeypatch.setenv("PLANNER_NEW", "n" * 32)
    cfg = trust_config_from_yaml(YAML.replace("SECRET_FILE", "/nonexistent/old.key"))
    with pytest.raises(ConfigError, match=r"agents\.0\.keys\.1\.secret_file"):
        KeyRing.from_config(cfg)


def test_short_secret_fails_fast():
    cfg = trust_config_from_yaml("agents: [{id: a, keys: [{id: k, secret: short}]}]")
    with pytest.raises(ConfigError, match=r"agents\.0\.keys\.0: secret is 5 bytes"):
        KeyRing.from_config(cfg)


@pytest.mark.parametrize(
    "yaml_text,bad_key",
    [
        ("guardrails: {trust: {agents: [{id: 'has.dot'}]}}", "guardrails.trust.agents.0.id"),
        ("guardrails: {trust: {agents: [{id: a, trust: god}]}}", "guardrails.trust.agents.0.trust"),
        ("guardrails: {trust: {agents: [{id: a, keys: [{id: k}]}]}}", "guardrails.trust.agents.0.keys.0"),
        ("guardrails: {trust: {attestation: {freshness_window_s: 0}}}", "guardrails.trust.attestation"),
        ("guardrails: {trust: {policy: {privileged_trust: restricted}}}", "guardrails.trust.policy"),
        ("guardrails: {trust: {agents: [{id: a}, {id: a}]}}", "guardrails.trust"),
        ("guardrails: {trust: {polcy: {}}}", "guardrails.trust.polcy"),
    ],
)
def test_invalid_config_names_the_bad_key(yaml_text, bad_key):
    with pytest.raises(ConfigError, match=bad_key.replace(".", r"\.")):
        load_config(yaml_text)
    with pytest.raises(ConfigError, match=bad_key.replace(".", r"\.")):
        trust_config_from_yaml(yaml_text)
