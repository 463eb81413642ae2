"""The Manual review queue of a project: pending proposals with their diffs, approve and reject with a comment.

prompt-api decides (write scope, membership, the approver tag), with the signed-in user's own key.
"""

from __future__ import annotations

import httpx
from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from stockade.model_api import project_directory
from stockade.model_api.body import read_form
from stockade.model_api.deps import CSRF_FIELD, DbDep, PageUser, SettingsDep, check_form_csrf
from stockade.model_api.pages import render
from stockade.model_api.prompt_api_client import PromptApiRefused, PromptApiUnavailable
from stockade.model_api.prompt_diff import diff_lines, prompt_text
from stockade.model_api.prompt_pages import (
    PromptApiDep,
    checked,
    need_key,
    notice_of,
    project_of,
    refused,
)

router = APIRouter()


# --- the review queue -------------------------------------------------------------------------------------------
@router.get("/projects/{project_id}/reviews")
async def reviews_page(
    request: Request, project_id: str, user: PageUser, db: DbDep, api: PromptApiDep
) -> Response:
    if api is None:
        return need_key()
    project = await project_of(db, user, project_id)
    if not checked(project_id):
        return refused(request, user, PromptApiRefused(404, "no such project"), project=project)
    try:
        pending = await api.proposals(project_id, "pending")
        decided = (await api.proposals(project_id, "approved")) + (
            await api.proposals(project_id, "rejected")
        )
        current = {p["prompt_name"]: p for p in await api.prompts(project_id)}
    except (PromptApiRefused, PromptApiUnavailable) as exc:
        return refused(request, user, exc, project=project)
    decided.sort(key=lambda p: p["decided_at"] or "", reverse=True)
    items = []
    for p in pending:
        active = (current.get(p["prompt_name"]) or {}).get("active")
        base = prompt_text(active["content"], active["config"]) if active else ""
        items.append(
            {
                "proposal": p,
                "against": active["version"] if active else None,
                "diff": diff_lines(base, prompt_text(p["content"], p["config"])),
            }
        )
    who = await project_directory.emails(
        db,
        {p["proposed_by"] for p in pending + decided} | {p["decided_by"] for p in decided if p["decided_by"]},
    )
    return render(
        request,
        "reviews.html",
        user,
        active="prompts",
        project=project,
        items=items,
        decided=decided[:20],
        who=who,
        notice=notice_of(request),
    )


@router.post("/projects/{project_id}/reviews/{proposal_id}/{verdict}")
async def decide(
    request: Request,
    project_id: str,
    proposal_id: str,
    verdict: str,
    user: PageUser,
    db: DbDep,
    settings: SettingsDep,
    api: PromptApiDep,
) -> Response:
    form = await read_form(request, settings.limits.max_body_bytes)
    check_form_csrf(request, settings, form.get(CSRF_FIELD))
    if api is None:
        return need_key()
    project = await project_of(db, user, project_id)
    if verdict not in ("approve", "reject") or not checked(project_id, proposal_id):
        return refused(request, user, PromptApiRefused(404, "no such review action"), project=project)
    comment = form.get("comment").strip() or None
    try:
        answer = await api.decide(project_id, proposal_id, verdict, comment)
    except (PromptApiRefused, PromptApiUnavailable) as exc:
        return refused(request, user, exc, project=project)
    if verdict == "approve":
        done = {
            "done": "approved",
            "prompt": answer["published"]["prompt_name"],
            "version": answer["published"]["version"],
        }
    else:
        done = {"done": "rejected", "prompt": answer["prompt_name"]}
    return RedirectResponse(f"/projects/{project_id}/reviews?{httpx.QueryParams(done)}", status_code=303)
