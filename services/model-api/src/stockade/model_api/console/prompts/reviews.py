"""The Manual review queue of a project: pending prompt and skill proposals with their diffs, approve and reject
with a comment.

prompt-api decides (write scope, membership, the approver tag), with the signed-in user's own key through
:mod:`stockade.client`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from stockade.client import AsyncStockadeClient
from stockade.client.errors import StockadeClientError
from stockade.model_api import project_directory
from stockade.model_api.console.pages import render
from stockade.model_api.console.prompts.diff import diff_off_loop, prompt_text
from stockade.model_api.console.prompts.shared import (
    PromptApiDep,
    PromptApiRefused,
    checked,
    notice_of,
    open_project_form,
    open_project_page,
    refused,
    rows,
    skill_md,
)
from stockade.model_api.deps import DbDep, PageUser, SettingsDep

router = APIRouter()


# --- the review queue -------------------------------------------------------------------------------------------
@router.get("/projects/{project_id}/reviews")
async def reviews_page(
    request: Request, project_id: str, user: PageUser, db: DbDep, api: PromptApiDep
) -> Response:
    page = await open_project_page(request, user, db, api, project_id, missing="no such project")
    api, project = page.api, page.project
    try:
        items = await _prompt_items(api, project_id) + await _skill_items(api, project_id)
        decided = [
            {**p, "kind": kind, "name": p[f"{kind}_name"]}
            for kind in ("prompt", "skill")
            for status in ("approved", "rejected")
            for p in await _proposals(api, project_id, status, kind)
        ]
    except StockadeClientError as exc:
        return refused(request, user, exc, project=project)
    decided.sort(key=lambda p: p["decided_at"] or "", reverse=True)
    pending = [i["proposal"] for i in items]
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


async def _proposals(
    api: AsyncStockadeClient, project_id: str, status: str, kind: str
) -> list[dict[str, Any]]:
    """The project's ``kind`` ("prompt" or "skill") proposals with ``status``."""
    if kind == "skill":
        return rows(await api.list_skill_proposals(project_id, status))
    return rows(await api.list_prompt_proposals(project_id, status))


async def _prompt_items(api: AsyncStockadeClient, project_id: str) -> list[dict[str, Any]]:
    """Pending prompt proposals, oldest first, each with its diff against the prompt's active version."""
    pending = await _proposals(api, project_id, "pending", "prompt")
    current = {p["prompt_name"]: p for p in rows(await api.list_prompts(project_id))} if pending else {}
    items = []
    for p in pending:
        active = (current.get(p["prompt_name"]) or {}).get("active")
        base = prompt_text(active["content"], active["config"]) if active else ""
        items.append(
            {
                "kind": "prompt",
                "name": p["prompt_name"],
                "proposal": p,
                "against": active["version"] if active else None,
                "diff": await diff_off_loop(base, prompt_text(p["content"], p["config"])),
                "files": [],
            }
        )
    return items


async def _skill_items(api: AsyncStockadeClient, project_id: str) -> list[dict[str, Any]]:
    """Pending skill proposals, oldest first, each with its SKILL.md diff and its files compared with the skill's
    active version (new, changed, unchanged, removed)."""
    pending = await _proposals(api, project_id, "pending", "skill")
    active = {s.skill_name: s.active_version for s in await api.list_skills(project_id)} if pending else {}
    items = []
    for p in pending:
        name, version = p["skill_name"], active.get(p["skill_name"])
        base_md, base_files = "", {}
        if version is not None:
            base_md = await skill_md(api, project_id, name, version)
            detail = await api.get_skill(project_id, name)
            base_files = {f.path: f.sha256 for f in detail.files if f.path != "SKILL.md"}
        files = _file_changes(p["files"], base_files)
        items.append(
            {
                "kind": "skill",
                "name": name,
                "proposal": p,
                "against": version,
                "diff": await diff_off_loop(base_md, p["skill_md"]),
                "files": files,
            }
        )
    return items


def _file_changes(proposed: list[dict[str, Any]], active: dict[str, str]) -> list[dict[str, Any]]:
    """The proposal's files marked new, changed or unchanged against the active version's (path -> sha256), and
    the active version's files the proposal leaves out, marked removed; by path."""
    out = []
    for f in proposed:
        before = active.get(f["path"])
        change = "new" if before is None else "unchanged" if before == f["sha256"] else "changed"
        out.append({**f, "change": change})
    listed = {f["path"] for f in proposed}
    out += [{"path": path, "size": None, "change": "removed"} for path in active if path not in listed]
    return sorted(out, key=lambda f: str(f["path"]))


def _decider(kind: str) -> Callable[..., Awaitable[Response]]:
    """The POST route that approves or rejects a ``kind`` ("prompt" or "skill") proposal (one URL per kind)."""

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
        opened = await open_project_form(request, user, db, settings, api, project_id)
        form, api, project = opened.form, opened.api, opened.project
        if verdict not in ("approve", "reject") or not checked(project_id, proposal_id):
            return refused(request, user, PromptApiRefused(404, "no such review action"), project=project)
        comment = form.get("comment").strip() or None
        decide = api.decide_skill_proposal if kind == "skill" else api.decide_prompt_proposal
        try:
            answer = (await decide(project_id, proposal_id, verdict, comment)).model_dump(mode="json")
        except StockadeClientError as exc:
            return refused(request, user, exc, project=project)
        name, published = f"{kind}_name", answer["published"]
        if published is not None:
            done = {"done": "approved", "prompt": published[name], "version": published["version"]}
        else:
            done = {"done": "rejected", "prompt": answer["proposal"][name]}
        return RedirectResponse(f"/projects/{project_id}/reviews?{httpx.QueryParams(done)}", status_code=303)

    return decide


router.add_api_route(
    "/projects/{project_id}/reviews/{proposal_id}/{verdict}",
    _decider("prompt"),
    methods=["POST"],
    name="decide",
)
router.add_api_route(
    "/projects/{project_id}/skill-reviews/{proposal_id}/{verdict}",
    _decider("skill"),
    methods=["POST"],
    name="decide_skill",
)
