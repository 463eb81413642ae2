"""Console pages for prompts and skills per project: your key, lists, histories, diffs and rollback (the review
queue is ``console_reviews``).

Every read and write goes to prompt-api over its HTTP API with the signed-in user's own API key (sealed in a
cookie, ``prompt_key``), so prompt-api alone applies its rules (scope, membership, approver tag); a refusal is
shown with its status and prompt-api's message. Forms carry the session's CSRF token like every console form.
"""

from __future__ import annotations

from typing import Any

import httpx
from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from stockade.identity import authenticate
from stockade.model_api import project_directory
from stockade.model_api.body import read_form
from stockade.model_api.deps import CSRF_FIELD, DbDep, PageUser, SettingsDep, check_form_csrf
from stockade.model_api.pages import render
from stockade.model_api.prompt_api_client import PromptApiRefused, PromptApiUnavailable
from stockade.model_api.prompt_diff import diff_lines, prompt_text
from stockade.model_api.prompt_key import MAX_KEY_CHARS, seal
from stockade.model_api.prompt_pages import (
    NO_KEY,
    PromptApiDep,
    checked,
    need_key,
    notice_of,
    project_of,
    refused,
    user_key,
    version_choice,
)
from stockade.model_api.routes.auth import _secure

router = APIRouter()


# --- the key and the projects ---------------------------------------------------------------------------------
@router.get("/projects")
async def projects_page(request: Request, user: PageUser, db: DbDep, settings: SettingsDep) -> Response:
    key = user_key(request, settings)
    context: dict[str, Any] = {
        "projects": await project_directory.my_projects(db, user.user.id),
        "key_display": f"{key[:8]}…{key[-4:]}" if key else None,
        "notice": {"connected": "Key connected.", "forgotten": "Key forgotten."}.get(
            request.query_params.get("done", "")
        ),
        "errors": [NO_KEY] if request.query_params.get("need") == "key" else [],
    }
    return render(request, "projects.html", user, active="prompts", **context)


@router.post("/projects/key")
async def connectuser_key(request: Request, user: PageUser, db: DbDep, settings: SettingsDep) -> Response:
    form = await read_form(request, settings.limits.max_body_bytes)
    check_form_csrf(request, settings, form.get(CSRF_FIELD))
    key = form.get("api_key").strip()
    problem = None
    if not key or len(key) > MAX_KEY_CHARS or not key.isprintable():
        problem = "Paste the whole key (it starts with stk_)."
    else:
        principal = await authenticate(db, key, settings.deployment)
        await db.commit()
        if principal is None:
            problem = "This key is unknown or revoked."
        elif principal.owner_id != user.user.id:
            problem = "This key belongs to another user: connect one of your own keys."
    if problem is not None:
        projects = await project_directory.my_projects(db, user.user.id)
        return render(
            request, "projects.html", user, 422, active="prompts", projects=projects, errors=[problem]
        )
    response = RedirectResponse("/projects?done=connected", status_code=303)
    response.set_cookie(
        settings.prompt_api.key_cookie,
        seal(request.state.session_token, key),
        max_age=int(settings.session.ttl_hours * 3600),
        path="/",
        httponly=True,
        samesite="strict",
        secure=_secure(request, settings),
    )
    return response


@router.post("/projects/key/forget")
async def forgetuser_key(request: Request, user: PageUser, settings: SettingsDep) -> Response:
    form = await read_form(request, settings.limits.max_body_bytes)
    check_form_csrf(request, settings, form.get(CSRF_FIELD))
    response = RedirectResponse("/projects?done=forgotten", status_code=303)
    response.delete_cookie(
        settings.prompt_api.key_cookie,
        path="/",
        httponly=True,
        samesite="strict",
        secure=_secure(request, settings),
    )
    return response


# --- one project's prompts and skills ---------------------------------------------------------------------------
@router.get("/projects/{project_id}")
async def project_page(
    request: Request, project_id: str, user: PageUser, db: DbDep, api: PromptApiDep
) -> Response:
    if api is None:
        return need_key()
    project = await project_of(db, user, project_id)
    if not checked(project_id):
        return refused(request, user, PromptApiRefused(404, "no such project"), project=project)
    try:
        prompts = await api.prompts(project_id)
        skills = await api.skills(project_id)
        pending = await api.proposals(project_id) if project["manual_review"] else []
    except (PromptApiRefused, PromptApiUnavailable) as exc:
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
    if api is None:
        return need_key()
    project = await project_of(db, user, project_id)
    if not checked(project_id, name):
        return refused(request, user, PromptApiRefused(404, "no such prompt"), project=project)
    try:
        versions = await api.versions(project_id, name)
        listed = await api.prompts(project_id)
    except (PromptApiRefused, PromptApiUnavailable) as exc:
        return refused(request, user, exc, project=project)
    active = next((p["active_version"] for p in listed if p["prompt_name"] == name), None)
    newest = versions[0]["version"] if versions else None
    older = versions[1]["version"] if len(versions) > 1 else newest
    q = request.query_params
    new = version_choice(versions, q.get("to"), newest)
    old = version_choice(versions, q.get("from"), older)
    by_number = {v["version"]: v for v in versions}
    diff = None
    if old is not None and new is not None:
        a, b = by_number[old], by_number[new]
        diff = diff_lines(prompt_text(a["content"], a["config"]), prompt_text(b["content"], b["config"]))
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
    form = await read_form(request, settings.limits.max_body_bytes)
    check_form_csrf(request, settings, form.get(CSRF_FIELD))
    if api is None:
        return need_key()
    project = await project_of(db, user, project_id)
    target = form.get("version")
    if not checked(project_id, name) or not target.isdigit():
        return refused(
            request, user, PromptApiRefused(422, "pick a version to roll back to"), project=project
        )
    message = form.get("commit_message").strip() or None
    try:
        published = await api.rollback(project_id, name, int(target), message)
    except (PromptApiRefused, PromptApiUnavailable) as exc:
        return refused(request, user, exc, project=project)
    done = {"done": "rollback", "version": published["version"], "source": target}
    return RedirectResponse(
        f"/projects/{project_id}/prompts/{name}?{httpx.QueryParams(done)}", status_code=303
    )


# --- skills -----------------------------------------------------------------------------------------------------
@router.get("/projects/{project_id}/skills/{name}")
async def skill_page(
    request: Request, project_id: str, name: str, user: PageUser, db: DbDep, api: PromptApiDep
) -> Response:
    if api is None:
        return need_key()
    project = await project_of(db, user, project_id)
    if not checked(project_id, name):
        return refused(request, user, PromptApiRefused(404, "no such skill"), project=project)
    try:
        detail = await api.skill(project_id, name)
        history = detail["history"]
        q = request.query_params
        new = version_choice(history, q.get("to"), history[0]["version"] if history else None)
        old = version_choice(history, q.get("from"), history[1]["version"] if len(history) > 1 else new)
        diff = None
        if old is not None and new is not None:
            diff = diff_lines(
                await api.skill_md(project_id, name, old), await api.skill_md(project_id, name, new)
            )
    except (PromptApiRefused, PromptApiUnavailable) as exc:
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
