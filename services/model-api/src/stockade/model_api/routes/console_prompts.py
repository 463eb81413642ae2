"""Console pages for prompts and skills per project: lists, histories, diffs, rollback and the review queue.

Every read and write goes to prompt-api over its HTTP API with the signed-in user's own API key (sealed in a
cookie, ``prompt_key``), so prompt-api alone applies its rules (scope, membership, approver tag); a refusal is
shown with its status and prompt-api's message. Forms carry the session's CSRF token like every console form.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

import httpx
from fastapi import APIRouter, Depends, Request
from fastapi.responses import RedirectResponse, Response

from stockade.identity import authenticate
from stockade.model_api import project_directory
from stockade.model_api.body import read_form
from stockade.model_api.deps import CSRF_FIELD, DbDep, PageUser, SettingsDep, check_form_csrf, get_state
from stockade.model_api.pages import render
from stockade.model_api.prompt_api_client import PromptApiClient, PromptApiRefused, PromptApiUnavailable
from stockade.model_api.prompt_diff import diff_lines, prompt_text
from stockade.model_api.prompt_key import MAX_KEY_CHARS, open_sealed, seal
from stockade.model_api.routes.auth import _secure
from stockade.model_api.settings import ModelApiSettings

router = APIRouter()
_ID = re.compile(r"^[A-Za-z0-9._-]{1,128}$")
NO_KEY = "Connect your API key first: the prompt pages act on prompt-api with your own key."


def _http(request: Request) -> httpx.AsyncClient:
    http = get_state(request).extras.get("prompt_api_http")
    if not isinstance(http, httpx.AsyncClient):
        raise RuntimeError("the prompt-api client is not set up")
    return http


def _key(request: Request, settings: ModelApiSettings) -> str | None:
    token = getattr(request.state, "session_token", None)
    return open_sealed(token, request.cookies.get(settings.prompt_api.key_cookie)) if token else None


async def prompt_api(request: Request, user: PageUser, settings: SettingsDep) -> PromptApiClient | None:
    key = _key(request, settings)
    return PromptApiClient(_http(request), key) if key else None


PromptApiDep = Annotated[PromptApiClient | None, Depends(prompt_api)]


def _refused(request: Request, user: PageUser, exc: Exception, **context: Any) -> Response:
    if isinstance(exc, PromptApiRefused):
        hint = " Connect a key that is not revoked." if exc.status == 401 else ""
        errors = [f"prompt-api refused ({exc.status}): {exc.message}.{hint}"]
        return render(request, "prompt_error.html", user, exc.status, errors=errors, **context)
    return render(request, "prompt_error.html", user, 503, errors=[str(exc)], **context)


def _checked(*values: str) -> bool:
    return all(_ID.fullmatch(v) for v in values)


# --- the key and the projects ---------------------------------------------------------------------------------
@router.get("/projects")
async def projects_page(request: Request, user: PageUser, db: DbDep, settings: SettingsDep) -> Response:
    key = _key(request, settings)
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
async def connect_key(request: Request, user: PageUser, db: DbDep, settings: SettingsDep) -> Response:
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
async def forget_key(request: Request, user: PageUser, settings: SettingsDep) -> Response:
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


def _need_key() -> Response:
    return RedirectResponse("/projects?need=key", status_code=303)


async def _project(db: DbDep, user: PageUser, project_id: str) -> dict[str, Any]:
    found = await project_directory.project(db, user.user.id, project_id)
    if found is None:  # not a member (or unknown): prompt-api will say so; show the id
        return {
            "id": project_id,
            "name": project_id,
            "organisation": "",
            "manual_review": False,
            "approver": False,
        }
    return {
        "id": found.id,
        "name": found.name,
        "organisation": found.organisation,
        "manual_review": found.manual_review,
        "approver": found.approver,
    }


# --- one project's prompts and skills ---------------------------------------------------------------------------
@router.get("/projects/{project_id}")
async def project_page(
    request: Request, project_id: str, user: PageUser, db: DbDep, api: PromptApiDep
) -> Response:
    if api is None:
        return _need_key()
    project = await _project(db, user, project_id)
    if not _checked(project_id):
        return _refused(request, user, PromptApiRefused(404, "no such project"), project=project)
    try:
        prompts = await api.prompts(project_id)
        skills = await api.skills(project_id)
        pending = await api.proposals(project_id) if project["manual_review"] else []
    except (PromptApiRefused, PromptApiUnavailable) as exc:
        return _refused(request, user, exc, project=project)
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
        notice=_notice(request),
    )


def _version_choice(versions: list[dict[str, Any]], raw: str | None, default: int | None) -> int | None:
    numbers = {v["version"] for v in versions}
    if raw and raw.isdigit() and int(raw) in numbers:
        return int(raw)
    return default


@router.get("/projects/{project_id}/prompts/{name}")
async def prompt_page(
    request: Request, project_id: str, name: str, user: PageUser, db: DbDep, api: PromptApiDep
) -> Response:
    if api is None:
        return _need_key()
    project = await _project(db, user, project_id)
    if not _checked(project_id, name):
        return _refused(request, user, PromptApiRefused(404, "no such prompt"), project=project)
    try:
        versions = await api.versions(project_id, name)
        listed = await api.prompts(project_id)
    except (PromptApiRefused, PromptApiUnavailable) as exc:
        return _refused(request, user, exc, project=project)
    active = next((p["active_version"] for p in listed if p["prompt_name"] == name), None)
    newest = versions[0]["version"] if versions else None
    older = versions[1]["version"] if len(versions) > 1 else newest
    q = request.query_params
    new = _version_choice(versions, q.get("to"), newest)
    old = _version_choice(versions, q.get("from"), older)
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
        notice=_notice(request),
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
        return _need_key()
    project = await _project(db, user, project_id)
    target = form.get("version")
    if not _checked(project_id, name) or not target.isdigit():
        return _refused(
            request, user, PromptApiRefused(422, "pick a version to roll back to"), project=project
        )
    message = form.get("commit_message").strip() or None
    try:
        published = await api.rollback(project_id, name, int(target), message)
    except (PromptApiRefused, PromptApiUnavailable) as exc:
        return _refused(request, user, exc, project=project)
    done = {"done": "rollback", "version": published["version"], "source": target}
    return RedirectResponse(
        f"/projects/{project_id}/prompts/{name}?{httpx.QueryParams(done)}", status_code=303
    )


def _notice(request: Request) -> str | None:
    """A notice after a redirect, composed here from checked values (never text taken from the URL)."""
    q = request.query_params
    version, source, prompt = q.get("version", ""), q.get("source", ""), q.get("prompt", "")
    if not (version.isdigit() or not version) or not (source.isdigit() or not source):
        return None
    if prompt and not _ID.fullmatch(prompt):
        return None
    return {
        "rollback": f"Version {version} is active: the content of version {source}.",
        "approved": f"Approved: {prompt} version {version} is active.",
        "rejected": f"Rejected the proposal for {prompt}.",
    }.get(q.get("done", ""))


# --- skills -----------------------------------------------------------------------------------------------------
@router.get("/projects/{project_id}/skills/{name}")
async def skill_page(
    request: Request, project_id: str, name: str, user: PageUser, db: DbDep, api: PromptApiDep
) -> Response:
    if api is None:
        return _need_key()
    project = await _project(db, user, project_id)
    if not _checked(project_id, name):
        return _refused(request, user, PromptApiRefused(404, "no such skill"), project=project)
    try:
        detail = await api.skill(project_id, name)
        history = detail["history"]
        q = request.query_params
        new = _version_choice(history, q.get("to"), history[0]["version"] if history else None)
        old = _version_choice(history, q.get("from"), history[1]["version"] if len(history) > 1 else new)
        diff = None
        if old is not None and new is not None:
            diff = diff_lines(
                await api.skill_md(project_id, name, old), await api.skill_md(project_id, name, new)
            )
    except (PromptApiRefused, PromptApiUnavailable) as exc:
        return _refused(request, user, exc, project=project)
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


# --- the review queue -------------------------------------------------------------------------------------------
@router.get("/projects/{project_id}/reviews")
async def reviews_page(
    request: Request, project_id: str, user: PageUser, db: DbDep, api: PromptApiDep
) -> Response:
    if api is None:
        return _need_key()
    project = await _project(db, user, project_id)
    if not _checked(project_id):
        return _refused(request, user, PromptApiRefused(404, "no such project"), project=project)
    try:
        pending = await api.proposals(project_id, "pending")
        decided = (await api.proposals(project_id, "approved")) + (
            await api.proposals(project_id, "rejected")
        )
        current = {p["prompt_name"]: p for p in await api.prompts(project_id)}
    except (PromptApiRefused, PromptApiUnavailable) as exc:
        return _refused(request, user, exc, project=project)
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
        notice=_notice(request),
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
        return _need_key()
    project = await _project(db, user, project_id)
    if verdict not in ("approve", "reject") or not _checked(project_id, proposal_id):
        return _refused(request, user, PromptApiRefused(404, "no such review action"), project=project)
    comment = form.get("comment").strip() or None
    try:
        answer = await api.decide(project_id, proposal_id, verdict, comment)
    except (PromptApiRefused, PromptApiUnavailable) as exc:
        return _refused(request, user, exc, project=project)
    if verdict == "approve":
        done = {
            "done": "approved",
            "prompt": answer["published"]["prompt_name"],
            "version": answer["published"]["version"],
        }
    else:
        done = {"done": "rejected", "prompt": answer["prompt_name"]}
    return RedirectResponse(f"/projects/{project_id}/reviews?{httpx.QueryParams(done)}", status_code=303)
