"""What each guardrail policy call sends and how its answer is read (issue 31), as :mod:`~stockade.client.calls`
does for prompts and skills; shared by the sync and the async client."""

from __future__ import annotations

from typing import Any

import httpx
from pydantic import TypeAdapter

from stockade.client import review_calls
from stockade.client.cache import policy_key
from stockade.client.calls import Call, Page, _model, _page_params, _paged, _project_listing, _segment
from stockade.client.models import PolicyDecision, PolicyProposal, PolicySummary, PolicyVersion

POLICY_READ_PATH = "/policies/active-version"
_POLICY = _model(TypeAdapter(PolicyVersion))
_POLICIES = _model(TypeAdapter(list[PolicySummary]))
_POLICY_HISTORY = _model(TypeAdapter(list[PolicyVersion]))
_PROPOSAL = _model(TypeAdapter(PolicyProposal))
_PROPOSALS = _model(TypeAdapter(list[PolicyProposal]))
_DECISION = _model(TypeAdapter(PolicyDecision))


def _rejection(response: httpx.Response) -> PolicyDecision:
    return PolicyDecision(proposal=_PROPOSAL(response))


def get_active_policy(project_id: str, policy_name: str) -> Call[PolicyVersion]:
    """The active version (key in the header; every failure is prompt-api's uniform 404), cached with its ETag;
    ``policy.published.v1`` invalidates it."""
    return Call(
        "GET",
        POLICY_READ_PATH,
        _POLICY,
        params={"project_id": project_id, "policy_name": policy_name},
        cache_key=policy_key(project_id, policy_name),
        push_invalidated=True,
        what=f"policy {policy_name!r} of project {project_id!r}",
    )


def list_policies(project_id: str, cursor: str | None = None) -> Call[Page[list[PolicySummary]]]:
    return _project_listing("policies", _POLICIES, project_id, cursor)


def policy_history(
    project_id: str, policy_name: str, cursor: str | None = None
) -> Call[Page[list[PolicyVersion]]]:
    return Call(
        "GET",
        f"/policies/{_segment(policy_name)}/versions",
        _paged(_POLICY_HISTORY),
        params=_page_params({"project_id": project_id}, cursor),
        cache_key=("policy-history", project_id, policy_name, cursor or ""),
        what=f"versions of policy {policy_name!r} of project {project_id!r}",
    )


def publish_policy(
    project_id: str, policy_name: str, yaml: str, commit_message: str | None
) -> Call[PolicyVersion]:
    body: dict[str, Any] = {"project_id": project_id, "policy_name": policy_name, "yaml": yaml}
    if commit_message is not None:
        body["commit_message"] = commit_message
    return Call(
        "POST",
        POLICY_READ_PATH,
        _POLICY,
        json=body,
        is_read=False,
        invalidates=policy_key(project_id, policy_name),
    )


def rollback_policy(
    project_id: str, policy_name: str, version: int, commit_message: str | None
) -> Call[PolicyVersion]:
    body: dict[str, Any] = {"project_id": project_id, "version": version}
    if commit_message is not None:
        body["commit_message"] = commit_message
    return Call(
        "POST",
        f"/policies/{_segment(policy_name)}/rollback",
        _POLICY,
        json=body,
        is_read=False,
        invalidates=policy_key(project_id, policy_name),
    )


# --- the Manual review of policies (the console's queue, `stockade policy publish --propose`) -----------------
def list_policy_proposals(project_id: str, status: str) -> Call[list[PolicyProposal]]:
    """The project's policy proposals with ``status`` (pending: the queue, oldest first; decided: newest first)."""
    return review_calls.listing("policy", _PROPOSALS, project_id, status)


def propose_policy(
    project_id: str, policy_name: str, yaml: str, commit_message: str | None
) -> Call[PolicyProposal]:
    body: dict[str, Any] = {"project_id": project_id, "yaml": yaml}
    if commit_message is not None:
        body["commit_message"] = commit_message
    return Call("POST", f"/policies/{_segment(policy_name)}/proposals", _PROPOSAL, json=body, is_read=False)


def decide_policy_proposal(
    project_id: str, proposal_id: str, verdict: str, comment: str | None
) -> Call[PolicyDecision]:
    """``verdict``: approve (the answer holds the published version) or reject (a comment is required)."""
    return review_calls.decision("policy", _DECISION, _rejection, project_id, proposal_id, verdict, comment)
