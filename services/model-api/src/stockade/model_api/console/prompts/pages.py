"""Console pages for prompts and skills per project: lists, histories, diffs and rollback (the review queue is
``reviews``).

Every read and write goes to prompt-api through :mod:`stockade.client` as the signed-in user, with the console
session's short-lived credential (an API key of the user, ``stockade.identity.session_keys``; nothing to paste), so
prompt-api alone applies its rules (scope, membership, approver tag); a refusal is shown with its status and
prompt-api's message. Forms carry the session's CSRF token like every console form.
"""

from __future__ import annotations

import httpx
from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from stockade.client.errors import StockadeClientError
from stockade.model_api import project_directory
from stockade.model_api.console.pages import render
from stockade.model_api.console.prompts.diff import diff_off_loop, prompt_text
from stockade.model_api.console.prompts.shared import (
    PromptApiDep,
    PromptApiRefused,
    checked,
    diff_versions,
    notice_of,
    open_project_form,
    open_project_page,
    refused,
    rows,
    skill_md,
)
from stockade.model_api.deps import DbDep, PageUser, SettingsDep

router = APIRouter()


# --- the projects ---------------------------------------------------------------------------------------------
@router.get("/projects")
async def projects_page(request: Request, user: PageUser, db: DbDep) -> Response:
    projects = await project_directory.my_projects(db, user.user.id)
    return render(request, "projects.html", user, active="prompts", projects=projects)


# --- one project's prompts and skills ---------------------------------------------------------------------------
@router.get("/projects/{project_id}")
async def project_page(
    request: Request, project_id: str, user: PageUser, db: DbDep, api: PromptApiDep
) -> Response:
    page = await open_project_page(request, user, db, api, project_id, missing="no such project")
    api, project = page.api, page.project
    try:
        prompts = rows(await api.list_prompts(project_id))
        skills = rows(await api.list_skills(project_id))
        pending = (
            [*await api.list_prompt_proposals(project_id), *await api.list_skill_proposals(project_id)]
            if project["manual_review"]
            else []
        )
    except StockadeClientError as exc:
        return refused(request, user, exc, project=project)
    who = await project_directory.emails(
        db, {p["active"]["published_by"] for p in prompts if p.get("active")}
    )
    return render(
        request,
        "project.html",
        user,
        active="prompts",
        project=project,
        prompts=prompts,
        skills=skills,
        pending=len(pending),
        who=who,
        notice=notice_of(request),
    )


@router.get("/projects/{project_id}/prompts/{name}")
async def prompt_page(
    request: Request, project_id: str, name: str, user: PageUser, db: DbDep, api: PromptApiDep
) -> Response:
    page = await open_project_page(request, user, db, api, project_id, name, missing="no such prompt")
    api, project = page.api, page.project
    try:
        versions = rows(await api.prompt_versions(project_id, name))
        listed = await api.list_prompts(project_id)
    except StockadeClientError as exc:
        return refused(request, user, exc, project=project)
    active = next((p.active_version for p in listed if p.prompt_name == name), None)
    old, new = diff_versions(request, versions)
    by_number = {v["version"]: v for v in versions}
    diff = None
    if old is not None and new is not None:
        a, b = by_number[old], by_number[new]
        diff = await diff_off_loop(
            prompt_text(a["content"], a["config"]), prompt_text(b["content"], b["config"])
        )
    who = await project_directory.emails(db, {v["published_by"] for v in versions})
    return render(
        request,
        "prompt.html",
        user,
        active="prompts",
        project=project,
        name=name,
        versions=versions,
        active_version=active,
        diff=diff,
        diff_from=old,
        diff_to=new,
        who=who,
        notice=notice_of(request),
    )


@router.post("/projects/{project_id}/prompts/{name}/rollback")
async def rollback(
    request: Request,
    project_id: str,
    name: str,
    user: PageUser,
    db: DbDep,
    settings: SettingsDep,
    api: PromptApiDep,
) -> Response:
    opened = await open_project_form(request, user, db, settings, api, project_id)
    form, api, project = opened.form, opened.api, opened.project
    target = form.get("version")
    if not checked(project_id, name) or not target.isdigit():
        return refused(
            request, user, PromptApiRefused(422, "pick a version to roll back to"), project=project
        )
    message = form.get("commit_message").strip() or None
    try:
        published = await api.rollback(project_id, name, int(target), message)
    except StockadeClientError as exc:
        return refused(request, user, exc, project=project)
    done = {"done": "rollback", "version": str(published.version), "source": target}
    return RedirectResponse(
        f"/projects/{project_id}/prompts/{name}?{httpx.QueryParams(done)}", status_code=303
    )


# --- skills -----------------------------------------------------------------------------------------------------
@router.get("/projects/{project_id}/skills/{name}")
async def skill_page(
    request: Request, project_id: str, name: str, user: PageUser, db: DbDep, api: PromptApiDep
) -> Response:
    page = await open_project_page(request, user, db, api, project_id, name, missing="no such skill")
    api, project = page.api, page.project
    try:
        detail = (await api.get_skill(project_id, name)).model_dump(mode="json")
        history = detail["history"]
        old, new = diff_versions(request, history)
        diff = None
        if old is not None and new is not None:
            diff = await diff_off_loop(
                await skill_md(api, project_id, name, old), await skill_md(api, project_id, name, new)
            )
    except StockadeClientError as exc:
        return refused(request, user, exc, project=project)
    who = await project_directory.emails(db, {v["published_by"] for v in history})
    return render(
        request,
        "skill.html",
        user,
        active="prompts",
        project=project,
        name=name,
        skill=detail,
        history=history,
        diff=diff,
        diff_from=old,
        diff_to=new,
        who=who,
    )
