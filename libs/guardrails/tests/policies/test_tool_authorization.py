"""Tool authorization: role allowlists, global denylist (deny wins), approval-gated sensitive tools."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from stockade.guardrails.events import EventKind, ListRecorder
from stockade.guardrails.policies import (
    Approval,
    PoliciesConfig,
    PolicyEngine,
    SensitiveToolConfig,
    ToolAuthorizer,
    ToolsConfig,
)

CONFIG = ToolsConfig(
    roles={"analyst": ["search", "db.read_*"], "admin": ["*"]},
    deny=["shell", "db.drop_*"],
    sensitive={"transfer_funds": SensitiveToolConfig(approvers=["alice", "bob"], max_age_seconds=300)},
)
ARGS = {"to": "ACME", "amount": 100}


@pytest.fixture
def authorizer() -> ToolAuthorizer:
    return ToolAuthorizer(CONFIG)


def test_role_allowlist(authorizer: ToolAuthorizer) -> None:
    assert authorizer.authorize("search", role="analyst").passed
    assert authorizer.authorize("db.read_users", role="analyst").passed
    verdict = authorizer.authorize("db.write_users", role="analyst")
    assert verdict.blocked and verdict.error == "not_in_role_allowlist"


def test_deny_wins_over_wildcard_allow(authorizer: ToolAuthorizer) -> None:
    assert authorizer.authorize("anything", role="admin").passed
    for tool in ("shell", "db.drop_table"):
        verdict = authorizer.authorize(tool, role="admin")
        assert verdict.blocked and verdict.error == "denylisted"


def test_unknown_role_is_denied_unless_default_allow() -> None:
    assert ToolAuthorizer(CONFIG).authorize("search", role="intern").error == "unknown_role"
    assert ToolAuthorizer(CONFIG).authorize("search").error == "unknown_role"
    lenient = ToolAuthorizer(CONFIG.model_copy(update={"default_allow": True}))
    assert lenient.authorize("search", role="intern").passed
    assert lenient.authorize("shell", role="intern").error == "denylisted"


def test_sensitive_tool_with_matching_approval_passes(authorizer: ToolAuthorizer) -> None:
    approval = Approval.for_call("transfer_funds", ARGS, approver="alice")
    verdict = authorizer.authorize("transfer_funds", role="admin", arguments=dict(ARGS), approval=approval)
    assert verdict.passed


def test_argument_order_does_not_matter_but_values_do(authorizer: ToolAuthorizer) -> None:
    approval = Approval.for_call("transfer_funds", {"amount": 100, "to": "ACME"}, approver="bob")
    assert authorizer.authorize("transfer_funds", role="admin", arguments=ARGS, approval=approval).passed
    tampered = {"to": "ACME", "amount": 100000}
    verdict = authorizer.authorize("transfer_funds", role="admin", arguments=tampered, approval=approval)
    assert verdict.blocked and verdict.error == "approval_args_mismatch"


def _bad_approval(reason: str) -> Approval | None:
    """Built when the test runs, not at collection: a suite can reach this test many minutes after collecting
    it, and an approval time taken then would drift out of the window it stands for."""
    now = datetime.now(UTC)
    return {
        "approval_required": lambda: None,
        "approver_not_allowed": lambda: Approval.for_call("transfer_funds", ARGS, approver="mallory"),
        "approval_for_other_tool": lambda: Approval.for_call("other_tool", ARGS, approver="alice"),
        "approval_expired": lambda: Approval.for_call(
            "transfer_funds", ARGS, approver="alice", approved_at=now - timedelta(seconds=301)
        ),
        "approval_in_future": lambda: Approval.for_call(
            "transfer_funds", ARGS, approver="alice", approved_at=now + timedelta(hours=1)
        ),
    }[reason]()


@pytest.mark.parametrize(
    "reason",
    [
        "approval_required",
        "approver_not_allowed",
        "approval_for_other_tool",
        "approval_expired",
        "approval_in_future",
    ],
)
def test_bad_approvals_are_denials(authorizer: ToolAuthorizer, reason: str) -> None:
    approval = _bad_approval(reason)
    verdict = authorizer.authorize("transfer_funds", role="admin", arguments=ARGS, approval=approval)
    assert verdict.blocked and verdict.error == reason


def test_naive_approval_time_is_rejected() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        Approval(tool="t", approver="a", approved_at=datetime.now(), args_hash="0" * 64)  # noqa: DTZ005


def test_every_decision_is_recorded_without_raw_arguments() -> None:
    recorder = ListRecorder()
    engine = PolicyEngine(PoliciesConfig(tools=CONFIG), recorder=recorder)
    approval = Approval.for_call("transfer_funds", ARGS, approver="alice")
    engine.before_tool_call("search", role="analyst", session_id="s1")
    engine.before_tool_call("shell", role="admin", session_id="s1")
    engine.before_tool_call(
        "transfer_funds", role="admin", arguments=ARGS, approval=approval, session_id="s1"
    )
    assert [e.action for e in recorder.events] == ["allow", "block", "allow"]
    assert all(e.kind is EventKind.TOOL_AUTHORIZATION and e.session_id == "s1" for e in recorder.events)
    assert recorder.events[1].payload["reason"] == "denylisted"
    approved = recorder.events[2].payload
    assert approved["approver"] == "alice" and approved["args_hash"] == approval.args_hash
    assert "ACME" not in str([e.payload for e in recorder.events])
