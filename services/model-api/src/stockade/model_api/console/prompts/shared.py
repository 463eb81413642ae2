"""What the prompt, skill and policy pages share: the user's prompt-api client (:mod:`stockade.client` with the
console session's short-lived credential, ``stockade.identity.session_keys``), the refusal page, checked path
values, the project's display facts and the notices after a redirect."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.responses import Response
from pydantic import BaseModel

from stockade.client import AsyncStockadeClient
from stockade.client.errors import ServerUnavailableError, StockadeClientError
from stockade.client.settings import CacheSettings, ClientSettings
from stockade.identity.session_keys import session_credential
from stockade.model_api import project_directory
from stockade.model_api.body import Form
from stockade.model_api.console.pages import render
from stockade.model_api.deps import DbDep, PageUser, SettingsDep, get_own, read_checked_form

SAFE_ID = re.compile(r"^[A-Za-z0-9._-]{1,128}$")


class PromptApiRefused(Exception):
    """prompt-api answered no (401, 403, 404, 422 ...), or the console refuses a value itself: the status and
    prompt-api's own message, as the page shows them."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class PromptApiUnavailable(Exception):
    """prompt-api did not answer, or failed (503 on the console)."""


def refusal(exc: StockadeClientError) -> PromptApiRefused | PromptApiUnavailable:
    """What a page shows for a failed call: prompt-api's status and its own words (not the client's summary)."""
    if isinstance(exc, ServerUnavailableError) or exc.status_code is None:  # never the service's address
        failed = (
            f"prompt-api failed ({exc.status_code})" if exc.status_code else "prompt-api cannot be reached"
        )
        return PromptApiUnavailable(failed)
    return PromptApiRefused(exc.status_code, exc.server_message or exc.message)


async def prompt_api(
    request: Request, user: PageUser, db: DbDep, settings: SettingsDep
) -> AsyncStockadeClient:
    """prompt-api as the signed-in user: every call carries the session's short-lived credential, an API key of
    this user that prompt-api checks like any other (spec 5.1), made or reused here, never pasted. No cache: a
    page shows what prompt-api holds now."""
    key = await session_credential(
        db,
        console_session_id=user.session_id,
        user_id=user.user.id,
        session_token=request.state.session_token,
        session_expires_at=user.expires_at,
        deployment=settings.deployment,
    )
    http = get_own(request).prompt_api_http
    return AsyncStockadeClient(
        key, ClientSettings(base_url=str(http.base_url), cache=CacheSettings(enabled=False)), http_client=http
    )


PromptApiDep = Annotated[AsyncStockadeClient, Depends(prompt_api)]


def rows(found: Sequence[BaseModel]) -> list[dict[str, Any]]:
    """The client's models as the templates read them (JSON values: times as ISO text)."""
    return [item.model_dump(mode="json") for item in found]


async def skill_md(api: AsyncStockadeClient, project_id: str, name: str, version: int) -> str:
    """A version's SKILL.md as text (what the diffs compare)."""
    found = await api.get_skill_file(project_id, name, "SKILL.md", version)
    return found.decode("utf-8", errors="replace")


def refused(request: Request, user: PageUser, exc: Exception, **context: Any) -> Response:
    if isinstance(exc, StockadeClientError):
        exc = refusal(exc)
    if isinstance(exc, PromptApiRefused):
        hint = " Sign in again." if exc.status == 401 else ""
        errors = [f"prompt-api refused ({exc.status}): {exc.message}.{hint}"]
        return render(request, "prompt_error.html", user, exc.status, errors=errors, **context)
    return render(request, "prompt_error.html", user, 503, errors=[str(exc)], **context)


def checked(*values: str) -> bool:
    return all(SAFE_ID.fullmatch(v) for v in values)


class ShowInstead(Exception):
    """Raised by a page's start when another response answers the request (a 404 page);
    the console's exception handler returns ``response``."""

    def __init__(self, response: Response) -> None:
        super().__init__("another response answers this request")
        self.response = response


@dataclass(frozen=True)
class ProjectPage:
    """What a project's page starts from: the user's prompt-api client and the project's display facts."""

    api: AsyncStockadeClient
    project: dict[str, Any]


async def open_project_page(
    request: Request,
    user: PageUser,
    db: DbDep,
    api: AsyncStockadeClient,
    project_id: str,
    *names: str,
    missing: str,
) -> ProjectPage:
    """The page's start; :class:`ShowInstead` answers instead with a 404 ``missing`` page for an id or name that
    cannot be one, and for a project the user is not a member of."""
    project = await project_of(request, db, user, project_id, missing)
    if not checked(project_id, *names):
        raise ShowInstead(refused(request, user, PromptApiRefused(404, missing), project=project))
    return ProjectPage(api, project)


@dataclass(frozen=True)
class ProjectForm(ProjectPage):
    """A form posted to a project's page: its fields, with the client and the project's facts."""

    form: Form


async def open_project_form(
    request: Request,
    user: PageUser,
    db: DbDep,
    settings: SettingsDep,
    api: AsyncStockadeClient,
    project_id: str,
) -> ProjectForm:
    """The form read and its CSRF token checked (403 otherwise), then as :func:`open_project_page` without the
    path check (each action checks its own values)."""
    form = await read_checked_form(request, settings)
    return ProjectForm(api, await project_of(request, db, user, project_id, "no such project"), form)


async def project_of(
    request: Request, db: DbDep, user: PageUser, project_id: str, missing: str
) -> dict[str, Any]:
    """The project's display facts; the ``missing`` 404 page (:class:`ShowInstead`) when the user is not a
    member, the same for a project of another organisation as for one that does not exist
    (docs/permissions.md), before anything is asked of prompt-api."""
    found = await project_directory.project(db, user.user.id, project_id)
    await db.commit()
    if found is None:
        unknown = {"id": project_id, "name": project_id, "organisation": "", "manual_review": False}
        page = refused(request, user, PromptApiRefused(404, missing), project=unknown | {"approver": False})
        raise ShowInstead(page)
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


def diff_versions(request: Request, versions: list[dict[str, Any]]) -> tuple[int | None, int | None]:
    """``(old, new)``: the versions (listed newest first) a page diffs, the query's ``from`` and ``to`` if they
    name listed versions, else the one before the newest and the newest."""
    q = request.query_params
    newest = versions[0]["version"] if versions else None
    older = versions[1]["version"] if len(versions) > 1 else newest
    return version_choice(versions, q.get("from"), older), version_choice(versions, q.get("to"), newest)


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
