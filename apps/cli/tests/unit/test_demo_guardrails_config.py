"""The guardrails configuration `stockade up` writes: the toxicity check on, pointed at the stack's service."""

from stockade.cli.demo import write_guardrails_config
from stockade.cli.stack import StackConfig
from stockade.guardrails import load_config


def test_config_enables_the_toxicity_check_at_the_stack_url(tmp_path):
    cfg = StackConfig(state_dir=tmp_path / "state", host="127.0.0.1", toxicity_port=18104)
    path = write_guardrails_config(cfg.guardrails_config_path, cfg.toxicity_url)
    assert path == tmp_path / "state" / "guardrails.yaml"
    checks = load_config(path).guardrails.checks
    assert checks.toxicity.enabled and checks.toxicity.url == "http://127.0.0.1:18104/classify"
    assert (
        "toxicity-classifier" in cfg.http_services()
        and cfg.http_services()["toxicity-classifier"][2] == 18104
    )


def test_config_follows_the_port_of_each_start(tmp_path):
    path = tmp_path / "guardrails.yaml"
    write_guardrails_config(path, "http://127.0.0.1:1/classify")
    write_guardrails_config(path, "http://127.0.0.1:2/classify")
    assert load_config(path).guardrails.checks.toxicity.url == "http://127.0.0.1:2/classify"


def test_the_demo_agents_work_for_the_demo_project(tmp_path):
    from stockade.cli.demo import DEMO_AGENTS, ensure_trust_config
    from stockade.guardrails.trust import AgentRegistry

    registry = AgentRegistry.from_path(ensure_trust_config(tmp_path, "proj-demo"))
    assert {a.agent_id: a.project for a in registry} == {agent: "proj-demo" for agent, _, _ in DEMO_AGENTS}
    without = AgentRegistry.from_path(ensure_trust_config(tmp_path / "no-demo"))  # --no-demo: no project
    assert {a.project for a in without} == {None}
