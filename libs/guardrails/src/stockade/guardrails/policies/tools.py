"""Tool authorization (spec 1): role allowlists, a global denylist that always wins, approval-gated tools.

Order of rules: denylist (block), then the role's allowlist (block when the tool is not on it), then, for a
sensitive tool, the approval (block when missing, for another tool, by someone not allowed to approve,
expired, from the future, or for other arguments). Every outcome is a Verdict; nothing raises.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from fnmatch import fnmatchcase
from typing import Any, TypedDict, Unpack

from stockade.guardrails.policies.approval import Approval, args_hash
from stockade.guardrails.policies.config import SensitiveToolConfig, ToolsConfig
from stockade.guardrails.policies.decisions import decision
from stockade.guardrails.verdict import Action, Verdict

NAME = "tool_authorization"


class _ToolArgs(TypedDict, total=False):
    role: str | None
    arguments: dict[str, Any] | None
    approval: Approval | None


class ToolRequest(_ToolArgs, total=False):
    """The keywords of :meth:`ToolAuthorizer.authorize` and :meth:`ToolAuthorizer.evaluate`."""

    now: datetime | None


class ToolCallOptions(_ToolArgs, total=False):
    """The keywords of ``before_tool_call()`` (PolicyEngine, GuardrailSystem): the request plus its session/run."""

    session_id: str | None
    run_id: str | None


def _matches(tool: str, patterns: Iterable[str]) -> bool:
    return any(fnmatchcase(tool, p) for p in patterns)


class ToolAuthorizer:
    """Decides whether a role may call a tool with given arguments."""

    def __init__(self, config: ToolsConfig | None = None) -> None:
        self.config = config or ToolsConfig()

    def sensitive_rules(self, tool: str) -> SensitiveToolConfig | None:
        for pattern, rules in self.config.sensitive.items():
            if fnmatchcase(tool, pattern):
                return rules
        return None

    def authorize(self, tool: str, **request: Unpack[ToolRequest]) -> Verdict:
        """May ``role`` call ``tool`` with ``arguments`` (keywords: :class:`ToolRequest`)?"""
        return self.evaluate(tool, **request)[0]

    def evaluate(
        self,
        tool: str,
        *,
        role: str | None = None,
        arguments: dict[str, Any] | None = None,
        approval: Approval | None = None,
        now: datetime | None = None,
    ) -> tuple[Verdict, dict[str, Any]]:
        """Like :meth:`authorize`, also returning the event detail (tool, role, approval metadata)."""
        start = time.perf_counter()
        reason, detail = self._deny_reason(tool, role, arguments or {}, approval, now)
        detail = {"tool": tool, "role": role, **detail}
        action = Action.ALLOW if reason is None else Action.BLOCK
        elapsed = (time.perf_counter() - start) * 1e3
        return decision(NAME, action, reason=reason, detail=detail, duration_ms=elapsed), detail

    def _deny_reason(
        self,
        tool: str,
        role: str | None,
        arguments: dict[str, Any],
        approval: Approval | None,
        now: datetime | None,
    ) -> tuple[str | None, dict[str, Any]]:
        cfg = self.config
        if not cfg.enabled:
            return None, {}
        if _matches(tool, cfg.deny):
            return "denylisted", {}
        allowlist = cfg.roles.get(role) if role is not None else None
        if allowlist is None:
            if not cfg.default_allow:
                return "unknown_role", {}
        elif not _matches(tool, allowlist):
            return "not_in_role_allowlist", {}
        rules = self.sensitive_rules(tool)
        if rules is None:
            return None, {}
        return self._check_approval(tool, arguments, approval, rules, now or datetime.now(UTC))

    def _check_approval(
        self,
        tool: str,
        arguments: dict[str, Any],
        approval: Approval | None,
        rules: SensitiveToolConfig,
        now: datetime,
    ) -> tuple[str | None, dict[str, Any]]:
        if approval is None:
            return "approval_required", {}
        detail: dict[str, Any] = {
            "approver": approval.approver,
            "approved_at": approval.approved_at.isoformat(),
            "args_hash": approval.args_hash,
        }
        if approval.tool != tool:
            return "approval_for_other_tool", detail
        if rules.approvers and approval.approver not in rules.approvers:
            return "approver_not_allowed", detail
        if approval.approved_at > now + timedelta(seconds=self.config.clock_skew_seconds):
            return "approval_in_future", detail
        if now - approval.approved_at > timedelta(seconds=rules.max_age_seconds):
            return "approval_expired", detail
        if approval.args_hash != args_hash(arguments):
            return "approval_args_mismatch", detail
        return None, detail
