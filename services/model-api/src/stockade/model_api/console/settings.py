"""Console pages for database configurations and the signed-in user's API keys."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from pydantic import ValidationError

from stockade.identity import (
    IdentityError,
    InvalidInputError,
    Scope,
    create_api_key,
    is_platform_admin,
    list_api_keys,
)
from stockade.model_api import project_directory
from stockade.model_api.catalogue import actions, dbconfigs, platform_audit
from stockade.model_api.catalogue.schemas import DbConfigCreate
from stockade.model_api.console.pages import render
from stockade.model_api.deps import AdminPage, DbDep, PageUser, RelayDep, SettingsDep, read_checked_form
from stockade.model_api.errors import CatalogueError
from stockade.runtime.uow import UnitOfWork

router = APIRouter()


async def _configs_page(
    request: Request, user: PageUser, db: DbDep, status_code: int = 200, **extra: Any
) -> Response:
    context: dict[str, Any] = {"configs": await dbconfigs.list_configs(db), "errors": [], "form": {}}
    context["admin"] = await is_platform_admin(db, user.user.id)
    context["audit"] = await platform_audit.recent(db, 50) if context["admin"] else []
    await db.commit()
    context["notice"] = "Activated." if request.query_params.get("done") == "activated" else None
    if request.query_params.get("done") == "created":
        context["notice"] = "Created."
    context.update(extra)
    return render(request, "db_configs.html", user, status_code, **context)


@router.get("/db-configs")
async def db_configs_page(request: Request, user: PageUser, db: DbDep) -> Response:
    return await _configs_page(request, user, db)


@router.post("/db-configs")
async def create_db_config(
    request: Request, user: AdminPage, db: DbDep, relay: RelayDep, settings: SettingsDep
) -> Response:
    form = await read_checked_form(request, settings)
    raw = {
        "name": form.get("name"),
        "db_type": form.get("db_type"),
        "description": form.get("description").strip() or None,
    }
    try:
        data = DbConfigCreate.model_validate({**raw, "activate": form.get("activate") == "1"})
        await actions.create_config(db, relay, data, actor=user.user.id)
    except ValidationError as exc:
        problems = [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors(include_url=False)]
        return await _configs_page(request, user, db, 422, errors=problems, form=raw)
    except CatalogueError as exc:
        return await _configs_page(request, user, db, 409, errors=[str(exc)], form=raw)
    return RedirectResponse("/db-configs?done=created", status_code=303)


@router.post("/db-configs/{config_id}/activate")
async def activate_db_config(
    request: Request,
    config_id: str,
    user: AdminPage,
    db: DbDep,
    relay: RelayDep,
    settings: SettingsDep,
) -> Response:
    await read_checked_form(request, settings)
    try:
        await actions.activate(db, relay, config_id, actor=user.user.id)
    except CatalogueError as exc:
        return await _configs_page(request, user, db, 404, errors=[str(exc)])
    return RedirectResponse("/db-configs?done=activated", status_code=303)


async def _keys_page(
    request: Request, user: PageUser, db: DbDep, settings: SettingsDep, status_code: int = 200, **extra: Any
) -> Response:
    context: dict[str, Any] = {
        "keys": list(reversed(await list_api_keys(db, user.user.id))),
        "created": None,
        "errors": [],
        "deployment": settings.deployment.value,
        "notice": "Key revoked." if request.query_params.get("done") == "revoked" else None,
    }
    context.update(extra)
    return render(request, "api_keys.html", user, status_code, **context)


@router.get("/api-keys")
async def api_keys_page(request: Request, user: PageUser, db: DbDep, settings: SettingsDep) -> Response:
    return await _keys_page(request, user, db, settings)


@router.post("/api-keys")
async def create_key(request: Request, user: PageUser, db: DbDep, settings: SettingsDep) -> Response:
    form = await read_checked_form(request, settings)
    scope = form.get("scope", Scope.READ.value)
    project = form.get("project").strip() or None  # ingest keys: the one project they send run events for
    if project is not None:  # among the user's own projects only: one answer for foreign and unknown (N17)
        mine = [
            p.id for p in await project_directory.my_projects(db, user.user.id) if project in (p.id, p.name)
        ]
        await db.commit()
        if len(mine) != 1:
            problem = f"no project {project!r} among yours" + (" (use its id)" if mine else "")
            return await _keys_page(request, user, db, settings, 422, errors=[problem])
        project = mine[0]
    try:
        async with UnitOfWork(db) as uow:  # stockade.identity never commits: the key exists once this does
            created = await create_api_key(
                uow.session, user.user.id, scope=scope, deployment=settings.deployment.value, project=project
            )
    except InvalidInputError as exc:
        return await _keys_page(request, user, db, settings, 422, errors=[str(exc)])
    # The plaintext is in this one answer only (no redirect, no caching); it is never shown again.
    return await _keys_page(request, user, db, settings, 201, created=created)


@router.post("/api-keys/{key_id}/revoke")
async def revoke_key(
    request: Request, key_id: str, user: PageUser, db: DbDep, relay: RelayDep, settings: SettingsDep
) -> Response:
    await read_checked_form(request, settings)
    try:
        await actions.revoke_own_key(db, relay, user.user.id, key_id)
    except IdentityError as exc:
        return await _keys_page(request, user, db, settings, 404, errors=[str(exc)])
    return RedirectResponse("/api-keys?done=revoked", status_code=303)
