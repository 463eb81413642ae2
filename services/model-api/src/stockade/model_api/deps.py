"""Typed dependencies: settings, database sessions, the outbox relay, the signed-in user, CSRF checks, and the
permissions of docs/permissions.md (the platform administrator role, the projects a user may read runs of)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Annotated, Any
from urllib.parse import quote, urlsplit

import httpx
from fastapi import Depends, HTTPException, Request

from stockade.identity import is_platform_admin
from stockade.identity.sessions import SessionPrincipal, csrf_matches, resolve_session
from stockade.model_api import project_directory
from stockade.model_api.body import Form, read_form
from stockade.model_api.console.runs.store import ProjectScope, RunStoreClient
from stockade.model_api.settings import ModelApiSettings
from stockade.runtime.app import ServiceState, service_of, service_state
from stockade.runtime.db_deps import SessionDep
from stockade.runtime.outbox import OutboxRelay

CSRF_HEADER = "X-CSRF-Token"
CSRF_FIELD = "csrf_token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class SignInRequired(Exception):
    """A console page was asked for without a live session: redirect to the sign-in page."""

    def __init__(self, next_path: str) -> None:
        super().__init__(next_path)
        self.location = f"/login?next={quote(next_path, safe='/')}"


class CsrfFailed(Exception):
    """A state-changing request from another origin, or without the session's CSRF token (403)."""


class NotPermitted(Exception):
    """A signed-in user without the role a route needs (403; docs/permissions.md)."""


@dataclass
class ModelApiState:
    """What the startup hook builds (``create_service_app``'s typed state) and the shutdown hook closes."""

    run_store: RunStoreClient
    prompt_api_http: httpx.AsyncClient
    relay: OutboxRelay


def get_state(request: Request) -> ServiceState[Any]:
    return service_state(request)


def get_own(request: Request) -> ModelApiState:
    return service_of(request, ModelApiState)


def get_settings(request: Request) -> ModelApiSettings:
    settings = get_state(request).settings
    assert isinstance(settings, ModelApiSettings)
    return settings


def get_relay(request: Request) -> OutboxRelay | None:
    return get_own(request).relay


def get_run_store(request: Request) -> RunStoreClient:
    return get_own(request).run_store


SettingsDep = Annotated[ModelApiSettings, Depends(get_settings)]
RunStoreDep = Annotated[RunStoreClient, Depends(get_run_store)]
DbDep = SessionDep
RelayDep = Annotated[OutboxRelay | None, Depends(get_relay)]


def _host_of(origin: str) -> str:
    return urlsplit(origin).netloc.lower()


def check_same_origin(request: Request, settings: ModelApiSettings) -> None:
    """Refuse a state-changing request whose Origin (or Referer) names another host.

    The host is compared, not the scheme, so a TLS-terminating proxy in front (https outside, http inside)
    does not break the console; ``session.trusted_origins`` adds further allowed origins.
    """
    if request.method in SAFE_METHODS:
        return
    claimed = request.headers.get("origin") or request.headers.get("referer")
    if claimed is None:
        return  # not a browser (browsers send Origin on every cross-site POST and DELETE)
    host = request.headers.get("host", request.url.netloc).lower()
    allowed = {host, *(_host_of(o) for o in settings.session.trusted_origins)}
    if claimed == "null" or _host_of(claimed) not in allowed:
        raise CsrfFailed(f"cross-site request from {claimed} refused")


async def current_session(request: Request, db: DbDep, settings: SettingsDep) -> SessionPrincipal | None:
    token = request.cookies.get(settings.session.cookie_name)
    idle = settings.session.idle_minutes
    principal = await resolve_session(db, token, timedelta(minutes=idle) if idle else None)
    await db.commit()  # end the read transaction: the route sees the newest rows
    if principal is not None:
        request.state.session_token = token
    return principal


MaybeUser = Annotated[SessionPrincipal | None, Depends(current_session)]


async def api_user(request: Request, principal: MaybeUser, settings: SettingsDep) -> SessionPrincipal:
    """JSON API: 401 without a live session; for writes, same origin and the session's X-CSRF-Token (required:
    ``GET /api/platform/session`` gives it)."""
    if principal is None:
        raise HTTPException(401, "sign in first: this endpoint needs a console session cookie")
    check_same_origin(request, settings)
    presented = request.headers.get(CSRF_HEADER)
    writes = request.method not in SAFE_METHODS
    if writes and not csrf_matches(request.state.session_token, presented):
        raise CsrfFailed(
            "send the session's X-CSRF-Token header (from GET /api/platform/session) with every write"
        )
    return principal


async def page_user(request: Request, principal: MaybeUser) -> SessionPrincipal:
    """Console pages: redirect to the sign-in page without a live session."""
    if principal is None:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        raise SignInRequired(target if request.method == "GET" else "/models")
    return principal


def check_form_csrf(request: Request, settings: ModelApiSettings, presented: str) -> None:
    """Console forms: same origin and the session's CSRF token in the hidden field."""
    check_same_origin(request, settings)
    token = getattr(request.state, "session_token", None)
    if token is None or not csrf_matches(token, presented or None):
        raise CsrfFailed("the form's CSRF token is missing or stale: reload the page and try again")


async def read_checked_form(request: Request, settings: ModelApiSettings) -> Form:
    """A console form (at most ``limits.max_body_bytes``), its CSRF token checked (403 otherwise)."""
    form = await read_form(request, settings.limits.max_body_bytes)
    check_form_csrf(request, settings, form.get(CSRF_FIELD))
    return form


ApiUser = Annotated[SessionPrincipal, Depends(api_user)]
PageUser = Annotated[SessionPrincipal, Depends(page_user)]


async def _platform_admin(user: SessionPrincipal, db: DbDep) -> SessionPrincipal:
    held = await is_platform_admin(db, user.user.id)
    await db.commit()  # end the read: an action opens its own transaction
    if not held:
        raise NotPermitted("this needs the platform administrator role (stockade admin platform grant)")
    return user


async def admin_api_user(user: ApiUser, db: DbDep) -> SessionPrincipal:
    """JSON API of a platform-wide setting: a signed-in platform administrator (403 otherwise)."""
    return await _platform_admin(user, db)


async def admin_page_user(user: PageUser, db: DbDep) -> SessionPrincipal:
    """Console page of a platform-wide setting: a signed-in platform administrator (403 otherwise)."""
    return await _platform_admin(user, db)


async def run_scope(user: PageUser, db: DbDep) -> ProjectScope:
    """The projects whose runs and audit records the user may read: their memberships, read per request; a
    platform administrator also reads the records that belong to no project."""
    projects = frozenset(p.id for p in await project_directory.my_projects(db, user.user.id))
    admin = await is_platform_admin(db, user.user.id)
    await db.commit()
    return ProjectScope(projects=projects, unowned=admin)


AdminUser = Annotated[SessionPrincipal, Depends(admin_api_user)]
AdminPage = Annotated[SessionPrincipal, Depends(admin_page_user)]
ScopeDep = Annotated[ProjectScope, Depends(run_scope)]
