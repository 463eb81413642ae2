"""Console pages for a project's guardrail policies (issue 31): the list, a policy's versions with the diff between
any two, and rollback.

Every read and write goes to prompt-api through :mod:`stockade.client` as the signed-in user, with the console
session's short-lived credential (an API key of the user, ``stockade.identity.session_keys``), so prompt-api
alone applies its rules (scope, membership, approver tag), exactly as on the prompt pages; a refusal is shown
with its status and prompt-api's message. Forms carry the session's CSRF token like every console form.
"""

from __future__ import annotations

from typing import Any, NoReturn

import httpx
from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from stockade.client import AsyncStockadeClient
from stockade.client.errors import StockadeClientError
from stockade.model_api import project_directory
from stockade.model_api.console.pages import render
from stockade.model_api.console.prompts.diff import diff_off_loop
from stockade.model_api.console.prompts.shared import (
    PromptApiDep,
    PromptApiRefused,
    ShowInstead,
    checked,
    diff_versions,
    project_of,
    refused,
)
from stockade.model_api.deps import DbDep, PageUser, SettingsDep, read_checked_form

router = APIRouter()


# prompt-api as the signed-in user through stockade.client, as on the prompt pages
PolicyClientDep = PromptApiDep


def shown(request: Request, user: PageUser, exc: StockadeClientError, project: dict[str, Any]) -> NoReturn:
    raise ShowInstead(refused(request, user, exc, project=project))


async def open_policies(
    request: Request, user: PageUser, db: DbDep, project_id: str, *names: str, missing: str
) -> dict[str, Any]:
    project = await project_of(request, db, user, project_id, missing)
    if not checked(project_id, *names):
        raise ShowInstead(refused(request, user, PromptApiRefused(404, missing), project=project))
    return project


def _version_row(v: Any) -> dict[str, Any]:
    row: dict[str, Any] = v.model_dump(mode="json")
    return row


@router.get("/projects/{project_id}/policies")
async def policies_page(
    request: Request, project_id: str, user: PageUser, db: DbDep, api: PolicyClientDep
) -> Response:
    project = await open_policies(request, user, db, project_id, missing="no such project")
    try:
        policies = [p.model_dump(mode="json") for p in await api.list_policies(project_id)]
        waiting = await api.list_policy_proposals(project_id, "pending") if project["manual_review"] else []
    except StockadeClientError as exc:
        shown(request, user, exc, project)
    who = await project_directory.emails(
        db, {p["active"]["published_by"] for p in policies if p.get("active")}
    )
    return render(
        request,
        "policies.html",
        user,
        active="prompts",
        project=project,
        policies=policies,
        pending=len(waiting),
        who=who,
    )


@router.get("/projects/{project_id}/policies/{name}")
async def policy_page(
    request: Request, project_id: str, name: str, user: PageUser, db: DbDep, api: PolicyClientDep
) -> Response:
    project = await open_policies(request, user, db, project_id, name, missing="no such policy")
    return await _policy_view(request, user, db, api, project, name)


async def _policy_view(
    request: Request,
    user: PageUser,
    db: DbDep,
    api: AsyncStockadeClient,
    project: dict[str, Any],
    name: str,
    *,
    draft: str | None = None,
    errors: list[str] | None = None,
) -> Response:
    """The policy's page: versions, the diff, rollback, and the editor (``draft``: text refused, shown again
    with prompt-api's ``errors``, 422)."""
    try:
        versions = [_version_row(v) for v in await api.policy_versions(project["id"], name)]
        listed = await api.list_policies(project["id"])
    except StockadeClientError as exc:
        shown(request, user, exc, project)
    active = next((p.active_version for p in listed if p.policy_name == name), None)
    old, new = diff_versions(request, versions)
    by_number = {v["version"]: v for v in versions}
    diff = None
    if old is not None and new is not None:
        diff = await diff_off_loop(by_number[old]["yaml"], by_number[new]["yaml"])
    who = await project_directory.emails(db, {v["published_by"] for v in versions})
    current = by_number[active]["yaml"] if active in by_number else ""
    return render(
        request,
        "policy.html",
        user,
        422 if errors else 200,
        active="prompts",
        project=project,
        name=name,
        versions=versions,
        active_version=active,
        diff=diff,
        diff_from=old,
        diff_to=new,
        who=who,
        draft=current if draft is None else draft,
        errors=errors or [],
        notice=_notice(request),
    )


@router.post("/projects/{project_id}/policies/{name}/publish")
async def publish_policy(
    request: Request,
    project_id: str,
    name: str,
    user: PageUser,
    db: DbDep,
    settings: SettingsDep,
    api: PolicyClientDep,
) -> Response:
    """The editor: publish the text as the next active version, or propose it (Manual review)."""
    form = await read_checked_form(request, settings)
    project = await open_policies(request, user, db, project_id, name, missing="no such policy")
    text = form.get("yaml").replace("\r\n", "\n")  # a browser sends a textarea with CRLF line ends
    message = form.get("commit_message").strip() or None
    propose = form.get("action") == "propose"
    try:
        if propose:
            await api.propose_policy(project_id, name, text, message)
        else:
            published = await api.publish_policy(project_id, name, text, message)
    except StockadeClientError as exc:
        if exc.status_code not in (413, 422):
            shown(request, user, exc, project)
        return await _policy_view(request, user, db, api, project, name, draft=text, errors=[exc.message])
    if propose:
        return RedirectResponse(f"/projects/{project_id}/policy-reviews", status_code=303)
    done = {"done": "published", "version": str(published.version)}
    return RedirectResponse(
        f"/projects/{project_id}/policies/{name}?{httpx.QueryParams(done)}", status_code=303
    )


@router.post("/projects/{project_id}/policies/{name}/rollback")
async def rollback_policy(
    request: Request,
    project_id: str,
    name: str,
    user: PageUser,
    db: DbDep,
    settings: SettingsDep,
    api: PolicyClientDep,
) -> Response:
    form = await read_checked_form(request, settings)
    project = await project_of(request, db, user, project_id, "no such project")
    target = form.get("version")
    if not checked(project_id, name) or not target.isdigit():
        return refused(
            request, user, PromptApiRefused(422, "pick a version to roll back to"), project=project
        )
    message = form.get("commit_message").strip() or None
    try:
        published = await api.rollback_policy(project_id, name, int(target), message)
    except StockadeClientError as exc:
        shown(request, user, exc, project)
    done = {"done": "rollback", "version": str(published.version), "source": target}
    return RedirectResponse(
        f"/projects/{project_id}/policies/{name}?{httpx.QueryParams(done)}", status_code=303
    )


def _notice(request: Request) -> str | None:
    """The notice after a publish or a rollback, composed from checked numbers (never text taken from the URL)."""
    q = request.query_params
    version, source = q.get("version", ""), q.get("source", "")
    if not version.isdigit():
        return None
    if q.get("done") == "published":
        return f"Version {version} is active. Agents on this policy pick it up now."
    if q.get("done") != "rollback" or not source.isdigit():
        return None
    return f"Version {version} is active: the policy of version {source}. Agents on it pick it up now."
