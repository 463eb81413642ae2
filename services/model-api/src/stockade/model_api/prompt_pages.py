"""What the prompt and skill pages share: the user's prompt-api client (their own key, sealed to the session),
the refusal page, checked path values, the project's display facts and the notices after a redirect."""

from __future__ import annotations

import re
from typing import Annotated, Any

import httpx
from fastapi import Depends, Request
from fastapi.responses import RedirectResponse, Response

from stockade.model_api import project_directory
from stockade.model_api.deps import DbDep, PageUser, SettingsDep, get_state
from stockade.model_api.pages import render
from stockade.model_api.prompt_api_client import PromptApiClient, PromptApiRefused
from stockade.model_api.prompt_key import open_sealed
from stockade.model_api.settings import ModelApiSettings

SAFE_ID = re.compile(r"^[A-Za-z0-9._-]{1,128}$")
NO_KEY = "Connect your API key first: the prompt pages act on prompt-api with your own key."


def _http(request: Request) -> httpx.AsyncClient:
    http = get_state(request).extras.get("prompt_api_http")
    if not isinstance(http, httpx.AsyncClient):
        raise RuntimeError("the prompt-api client is not set up")
    return http


def user_key(request: Request, settings: ModelApiSettings) -> str | None:
    token = getattr(request.state, "session_token", None)
    return open_sealed(token, request.cookies.get(settings.prompt_api.key_cookie)) if token else None


async def prompt_api(request: Request, user: PageUser, settings: SettingsDep) -> PromptApiClient | None:
    key = user_key(request, settings)
    return PromptApiClient(_http(request), key) if key else None


PromptApiDep = Annotated[PromptApiClient | None, Depends(prompt_api)]


def refused(request: Request, user: PageUser, exc: Exception, **context: Any) -> Response:
    if isinstance(exc, PromptApiRefused):
        hint = " Connect a key that is not revoked." if exc.status == 401 else ""
        errors = [f"prompt-api refused ({exc.status}): {exc.message}.{hint}"]
        return render(request, "prompt_error.html", user, exc.status, errors=errors, **context)
    return render(request, "prompt_error.html", user, 503, errors=[str(exc)], **context)


def checked(*values: str) -> bool:
    return all(SAFE_ID.fullmatch(v) for v in values)


def need_key() -> Response:
    return RedirectResponse("/projects?need=key", status_code=303)


async def project_of(db: DbDep, user: PageUser, project_id: str) -> dict[str, Any]:
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


def version_choice(versions: list[dict[str, Any]], raw: str | None, default: int | None) -> int | None:
    numbers = {v["version"] for v in versions}
    if raw and raw.isdigit() and int(raw) in numbers:
        return int(raw)
    return default


def notice_of(request: Request) -> str | None:
    """A notice after a redirect, composed here from checked values (never text taken from the URL)."""
    q = request.query_params
    version, source, prompt = q.get("version", ""), q.get("source", ""), q.get("prompt", "")
    if not (version.isdigit() or not version) or not (source.isdigit() or not source):
        return None
    if prompt and not SAFE_ID.fullmatch(prompt):
        return None
    return {
        "rollback": f"Version {version} is active: the content of version {source}.",
        "approved": f"Approved: {prompt} version {version} is active.",
        "rejected": f"Rejected the proposal for {prompt}.",
    }.get(q.get("done", ""))
