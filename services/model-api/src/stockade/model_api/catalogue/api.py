"""JSON API (spec 4.2): /api/platform/models, plus session info and database configurations."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from stockade.model_api.body import invalid, read_json
from stockade.model_api.catalogue import actions, dbconfigs, platform_audit
from stockade.model_api.catalogue import models as catalogue
from stockade.model_api.catalogue.schemas import (
    DbConfigCreate,
    ModelUpsert,
    check_model_id,
    normalise_provider,
)
from stockade.model_api.deps import AdminUser, ApiUser, DbDep, RelayDep, SettingsDep
from stockade.runtime.body import documented_body
from stockade.runtime.errors import error_responses

# Every route: 401 without a live console session (spec 5.2), 422 for parameters or a body that do not fit.
router = APIRouter(
    prefix="/api/platform",
    responses=error_responses(
        {
            401: "No live console session: sign in first (the session cookie).",
            422: "Parameters or body do not match the schema.",
        }
    ),
)
_WRITE = error_responses(
    {
        403: "Another origin, or an X-CSRF-Token that does not belong to the session.",
        413: "The body is over limits.max_body_bytes.",
        415: "The body is not sent as Content-Type: application/json.",
    }
)
_NOT_FOUND = error_responses({404: "No such model entry or database configuration."})
_ADMIN = error_responses({403: "Not a platform administrator (docs/permissions.md)."})


def _validated(model: type[ModelUpsert] | type[DbConfigCreate], data: Any) -> Any:
    if not isinstance(data, dict):
        invalid("the body must be a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise RequestValidationError(exc.errors(include_url=False, include_input=False)) from None


def _provider(value: str, field: str = "provider") -> str:
    try:
        return normalise_provider(value)
    except ValueError as exc:
        invalid(str(exc), field)


def _correlation(request: Request) -> str | None:
    return request.headers.get("x-request-id") or request.headers.get("x-correlation-id")


@router.get("/session")
async def session_info(user: ApiUser) -> dict[str, Any]:
    return {
        "user": {"id": user.user.id, "email": user.user.email},
        "expiresAt": user.expires_at.isoformat(),
        "csrfToken": user.csrf_token,
    }


@router.get("/models")
async def list_models(
    user: ApiUser, db: DbDep, provider: str | None = Query(default=None, max_length=64)
) -> dict[str, Any]:
    config = await dbconfigs.active_config(db)
    wanted = _provider(provider) if provider is not None and provider.strip() else None
    groups = await catalogue.list_models(db, config.id, wanted)
    return {
        "dbConfig": config.as_json(),
        "providers": [{"provider": g.provider, "models": [m.record() for m in g.models]} for g in groups],
        "total": sum(len(g.models) for g in groups),
    }


@router.post(
    "/models",
    responses={201: {"description": "Created (200: an existing entry was updated)."}, **_WRITE, **_NOT_FOUND},
    openapi_extra=documented_body(ModelUpsert),
)
async def upsert_model(
    request: Request, user: ApiUser, db: DbDep, relay: RelayDep, settings: SettingsDep
) -> JSONResponse:
    body: ModelUpsert = _validated(ModelUpsert, await read_json(request, settings.limits.max_body_bytes))
    config, saved = await actions.save_model(
        db,
        relay,
        body.provider,
        body.model,
        actor=user.user.id,
        correlation_id=_correlation(request),
        effective_at=body.effective_at,
    )
    created = saved.change == "created"
    return JSONResponse(
        {
            "provider": body.provider,
            "model": saved.model.record(),
            "dbConfig": config.as_json(),
            "created": created,
        },
        status_code=201 if created else 200,
    )


@router.delete("/models", responses={**_WRITE, **_NOT_FOUND})
async def delete_model(
    request: Request,
    user: ApiUser,
    db: DbDep,
    relay: RelayDep,
    model_id: str = Query(min_length=1, max_length=200),
    provider: str = Query(min_length=1, max_length=64),
) -> dict[str, Any]:
    wanted = _provider(provider)
    try:
        check_model_id(model_id)
    except ValueError as exc:
        invalid(str(exc), "model_id")
    config, gone = await actions.remove_model(
        db, relay, wanted, model_id, actor=user.user.id, correlation_id=_correlation(request)
    )
    return {"deleted": True, "provider": wanted, "model_id": gone.model_id, "dbConfig": config.as_json()}


@router.get("/db-configs")
async def list_db_configs(user: ApiUser, db: DbDep) -> dict[str, Any]:
    return {"dbConfigs": [c.as_json() for c in await dbconfigs.list_configs(db)]}


@router.post(
    "/db-configs",
    status_code=201,
    responses={
        **_WRITE,
        **_ADMIN,
        **error_responses({409: "A configuration with that name exists already."}),
    },
    openapi_extra=documented_body(DbConfigCreate),
)
async def create_db_config(
    request: Request, user: AdminUser, db: DbDep, relay: RelayDep, settings: SettingsDep
) -> dict[str, Any]:
    body: DbConfigCreate = _validated(
        DbConfigCreate, await read_json(request, settings.limits.max_body_bytes)
    )
    config = await actions.create_config(
        db, relay, body, actor=user.user.id, correlation_id=_correlation(request)
    )
    return config.as_json()


@router.post("/db-configs/{config_id}/activate", responses={**_WRITE, **_ADMIN, **_NOT_FOUND})
async def activate_db_config(
    request: Request, config_id: str, user: AdminUser, db: DbDep, relay: RelayDep
) -> dict[str, Any]:
    config = await actions.activate(
        db, relay, config_id, actor=user.user.id, correlation_id=_correlation(request)
    )
    return config.as_json()


@router.get("/audit", responses=_ADMIN)
async def platform_audit_trail(
    user: AdminUser, db: DbDep, limit: int = Query(default=100, ge=1, le=platform_audit.MAX_READ)
) -> dict[str, Any]:
    """Who changed platform-wide settings (database configurations, catalogue entries), newest first."""
    return {"records": [r.as_json() for r in await platform_audit.recent(db, limit)]}
