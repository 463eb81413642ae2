"""``require_capability``: a sender could skip layer C by naming no capability (nothing privileged to check).
A receiver that requires one (policy-wide, or its own registry entry) refuses such a message at layer C."""

import pytest

from stockade.guardrails.errors import PrivilegeError
from stockade.guardrails.trust import AgentTrustEnforcer, Layer, RejectionReason, TrustConfig
from stockade.guardrails.trust.loading import trust_config_from_yaml

R = RejectionReason


def _with_receiver_requirement(config: TrustConfig, agent_id: str) -> TrustConfig:
    agents = tuple(a.model_copy(update={"require_capability": a.id == agent_id}) for a in config.agents)
    return config.model_copy(update={"agents": agents})


async def test_a_privileged_receiver_requires_a_capability_by_default(enforcer):
    # root holds payments.transfer (privileged): naming no capability no longer skips layer C (review M7)
    env = enforcer.sign("planner", "root", "pay 10 to mallory")
    result = await enforcer.verify_message(env, "pay 10 to mallory", expected_receiver="root")
    assert (result.passed, result.layer, result.reason) == (False, Layer.C, R.CAPABILITY_REQUIRED)
    env = enforcer.sign("planner", "executor", "summarize q3")  # an unprivileged receiver: as before
    assert (await enforcer.verify_message(env, "summarize q3", expected_receiver="executor")).passed


async def test_a_receiver_may_turn_the_default_off_explicitly(make_trust_config, clock):
    config = make_trust_config()
    agents = tuple(
        a.model_copy(update={"require_capability": False}) if a.id == "root" else a for a in config.agents
    )
    enforcer = AgentTrustEnforcer.from_config(config.model_copy(update={"agents": agents}), clock=clock)
    env = enforcer.sign("planner", "root", "pay 10 to mallory")  # the operator's explicit choice
    assert (await enforcer.verify_message(env, "pay 10 to mallory", expected_receiver="root")).passed


async def test_the_policy_refuses_a_message_without_capability_at_layer_c(make_trust_config, clock):
    enforcer = AgentTrustEnforcer.from_config(make_trust_config(require_capability=True), clock=clock)
    env = enforcer.sign("planner", "root", "pay 10 to mallory")
    result = await enforcer.verify_message(env, "pay 10 to mallory", expected_receiver="root")
    assert (result.passed, result.layer, result.reason) == (False, Layer.C, R.CAPABILITY_REQUIRED)
    assert result.sender.agent_id == "planner" and "must name a capability" in result.error
    env = enforcer.sign("planner", "root", "pay 10 to mallory")
    with pytest.raises(PrivilegeError, match="capability_required"):
        await enforcer.verify_message(
            env, "pay 10 to mallory", expected_receiver="root", raise_on_failure=True
        )
    # Named, the capability goes through layers A and C as usual: privileged, and planner is only trusted.
    env = enforcer.sign("planner", "root", "pay 10", capability="payments.transfer")
    assert (
        await enforcer.verify_message(env, "pay 10", expected_receiver="root")
    ).reason is R.PRIVILEGE_REQUIRED
    env = enforcer.sign("planner", "root", "sum up", capability="summarize")
    assert (await enforcer.verify_message(env, "sum up", expected_receiver="root")).passed
    # The receiver's own call may name it for an unsigned envelope.
    env = enforcer.sign("executor", "root", "sum up")
    passed = await enforcer.verify_message(
        env, "sum up", expected_receiver="root", required_capability="summarize"
    )
    assert passed.passed and passed.capability == "summarize"


async def test_a_receiver_can_require_it_for_itself(make_trust_config, clock):
    config = _with_receiver_requirement(make_trust_config(), "root")
    enforcer = AgentTrustEnforcer.from_config(config, clock=clock)
    assert enforcer.registry.get("root").require_capability
    env = enforcer.sign("planner", "root", "pay 10 to mallory")
    refused = await enforcer.verify_message(env, "pay 10 to mallory")
    assert (refused.layer, refused.reason) == (Layer.C, R.CAPABILITY_REQUIRED)
    env = enforcer.sign("planner", "executor", "hello")  # other receivers are unaffected
    assert (await enforcer.verify_message(env, "hello")).passed


def test_the_agent_setting_loads_from_yaml():
    config = trust_config_from_yaml(
        "guardrails:\n  trust:\n    policy: {require_capability: true}\n"
        "    agents:\n      - {id: vault, trust: trusted, require_capability: true}\n      - {id: other}\n"
    )
    assert config.policy.require_capability
    assert [a.require_capability for a in config.agents] == [True, None]  # None: by its capabilities
