"""GuardrailSystem's agent hooks delegate to the policy engine and record to the system's recorder."""

from __future__ import annotations

from stockade.guardrails.events import EventKind, ListRecorder
from stockade.guardrails.policies import Approval
from stockade.guardrails.system import GuardrailSystem

CONFIG = """
guardrails:
  checks:  # content checks are not under test here
    pii: {enabled: false}
    exfiltration: {enabled: false}
    classification: {enabled: false}
  policies:
    tools:
      roles: {support: [lookup_order, refund]}
      deny: [delete_account]
      sensitive: {refund: {approvers: [lead]}}
    rate_limits: {requests_per_session: 2, tool_calls_per_session: 1, tool_execution_seconds: 5}
"""


async def test_agent_hooks_enforce_configured_policies() -> None:
    recorder = ListRecorder()
    system = GuardrailSystem(CONFIG, recorder=recorder)
    assert system.before_tool_call("lookup_order", role="support", session_id="s").passed
    assert system.before_tool_call("delete_account", role="support", session_id="s").blocked
    assert system.before_tool_call("refund", role="support", arguments={"order": 7}, session_id="s").blocked
    approval = Approval.for_call("refund", {"order": 7}, approver="lead")
    assert system.before_tool_call("refund", role="support", arguments={"order": 7}, approval=approval).passed

    assert (await system.before_request("s")).passed
    assert (await system.before_request("s")).passed
    assert (await system.before_request("s")).blocked

    assert (await system.check_tool_call_limit("s")).passed
    ticket = system.tool_call_started("s", "lookup_order")
    finished = await system.tool_call_finished(ticket, duration_seconds=0.25)
    assert finished.passed
    assert (await system.check_tool_call_limit("s")).error == "tool_call_quota_exceeded"

    kinds = [e.kind for e in recorder.events]
    assert kinds.count(EventKind.TOOL_AUTHORIZATION) == 4 and kinds.count(EventKind.RATE_LIMIT) == 6


async def test_recorder_swapped_later_receives_policy_events() -> None:
    system = GuardrailSystem(CONFIG)
    system.before_tool_call("lookup_order", role="support")  # builds the engine with the old recorder
    later = ListRecorder()
    system.recorder = later
    system.before_tool_call("lookup_order", role="support", session_id="s2")
    assert [e.session_id for e in later.events] == ["s2"]
