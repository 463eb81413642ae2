"""The Manual review queue of a project's guardrail policies: pending policy versions with their diff against the
active version, approve and reject with a comment, and the recent decisions (issue 31).

prompt-api decides (write scope, membership, the approver tag), with the signed-in user's own key through
:mod:`stockade.client`, exactly as for prompt and skill proposals.
"""

from __future__ import annotations

from typing import Any

import httpx
from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from stockade.client.errors import StockadeClientError
from stockade.model_api import project_directory
from stockade.model_api.console.pages import render
from stockade.model_api.console.policies.pages import PolicyClientDep, open_policies, shown
from stockade.model_api.console.prompts.diff import diff_off_loop
from stockade.model_api.console.prompts.shared import PromptApiRefused, checked, project_of, refused
from stockade.model_api.deps import DbDep, PageUser, SettingsDep, read_checked_form

router = APIRouter()


@router.get("/projects/{project_id}/policy-reviews")
async def policy_reviews_page(
    request: Request, project_id: str, user: PageUser, db: DbDep, api: PolicyClientDep
) -> Response:
    project = await open_policies(request, user, db, project_id, missing="no such project")
    try:
        pending = await api.list_policy_proposals(project_id, "pending")
        active = {p.policy_name: p.active for p in await api.list_policies(project_id)} if pending else {}
        decided = [
            p.model_dump(mode="json")
            for status in ("approved", "rejected")
            for p in await api.list_policy_proposals(project_id, status)
        ]
    except StockadeClientError as exc:
        shown(request, user, exc, project)
    items: list[dict[str, Any]] = []
    for p in pending:
        base = active.get(p.policy_name)
        items.append(
            {
                "proposal": p.model_dump(mode="json"),
                "against": base.version if base else None,
                "diff": await diff_off_loop(base.yaml if base else "", p.yaml),
            }
        )
    decided.sort(key=lambda p: p["decided_at"] or "", reverse=True)
    who = await project_directory.emails(
        db,
        {p.proposed_by for p in pending}
        | {p["proposed_by"] for p in decided}
        | {p["decided_by"] for p in decided if p["decided_by"]},
    )
    return render(
        request,
        "policy_reviews.html",
        user,
        active="prompts",
        project=project,
        items=items,
        decided=decided[:20],
        who=who,
        notice=_notice(request),
    )


@router.post("/projects/{project_id}/policy-reviews/{proposal_id}/{verdict}")
async def decide_policy(
    request: Request,
    project_id: str,
    proposal_id: str,
    verdict: str,
    user: PageUser,
    db: DbDep,
    settings: SettingsDep,
    api: PolicyClientDep,
) -> Response:
    form = await read_checked_form(request, settings)
    project = await project_of(request, db, user, project_id, "no such project")
    if verdict not in ("approve", "reject") or not checked(project_id, proposal_id):
        return refused(request, user, PromptApiRefused(404, "no such review action"), project=project)
    comment = form.get("comment").strip() or None
    try:
        decision = await api.decide_policy_proposal(project_id, proposal_id, verdict, comment)
    except StockadeClientError as exc:
        shown(request, user, exc, project)
    done = {"done": "rejected", "policy": decision.proposal.policy_name}
    if decision.published is not None:
        done = {"done": "approved", "policy": decision.published.policy_name}
        done["version"] = str(decision.published.version)
    return RedirectResponse(
        f"/projects/{project_id}/policy-reviews?{httpx.QueryParams(done)}", status_code=303
    )


def _notice(request: Request) -> str | None:
    """The notice after a decision, composed from checked values (never text taken from the URL)."""
    q = request.query_params
    version, policy = q.get("version", ""), q.get("policy", "")
    if not checked(policy) or not (version.isdigit() or not version):
        return None
    return {
        "approved": f"Approved: {policy} version {version} is active; agents on it pick it up now.",
        "rejected": f"Rejected the proposal for {policy}.",
    }.get(q.get("done", ""))
