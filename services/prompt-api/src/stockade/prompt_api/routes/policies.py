"""Guardrail policy routes (issue 31): the active read (uniform 404, ETag/304), listing, history, publish and
rollback. Proposals and their review are the shared review routes (``routes/reviews.py``, kind ``policy``)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse

from stockade.prompt_api import paging, policies
from stockade.prompt_api.conditional import not_modified, response_304
from stockade.prompt_api.deps import (
    API_KEY_HEADER,
    API_KEY_QUERY,
    ReaderDep,
    SessionDep,
    SettingsDep,
    WritingDep,
)
from stockade.prompt_api.responses import POLICY_PUBLISH_BODY, POLICY_ROLLBACK_BODY, READ, WRITE
from stockade.prompt_api.routes.prompts import UNIFORM_404
from stockade.prompt_api.schemas import PolicyPublish, PolicyRollback, PolicySummary, PolicyVersionPublic
from stockade.runtime.storable import StorableStr, is_storable

router = APIRouter(prefix="/policies", tags=["policies"])

_NEXT = {"X-Next-Cursor": {"description": "The next page's cursor (absent on the last page)."}}
_READ_PARAMETERS = [
    {"name": name, "in": "query", "required": False, "schema": {"type": "string"}, "description": text}
    for name, text in (
        ("api_key", "The API key, when it cannot go in the X-API-Key header (preferred)."),
        ("project_id", "The project's id."),
        ("policy_name", "The policy's name within the project."),
    )
]


def _uniform_404() -> Response:
    return Response(content=UNIFORM_404, status_code=404, media_type="application/json")


@router.get(
    "/active-version",
    response_model=PolicyVersionPublic,
    responses={404: {"description": "Every failure, byte for byte the same body."}, 304: {}},
    openapi_extra={"parameters": _READ_PARAMETERS},
)
async def read_active_policy_version(
    request: Request, session: SessionDep, settings: SettingsDep
) -> Response:
    """The active version of one policy, for a key whose owner is a member of the project's organisation. Every
    failure is the prompt read's uniform 404 (it says nothing about what exists)."""
    query = request.query_params
    key = request.headers.get(API_KEY_HEADER) or query.get(API_KEY_QUERY)
    project_id, policy_name = query.get("project_id"), query.get("policy_name")
    if project_id is None or policy_name is None:
        return _uniform_404()
    if not all(is_storable(value) for value in (key or "", project_id, policy_name)):
        return _uniform_404()
    found = await policies.read_active(session, key, project_id, policy_name, settings.deployment)
    if found is None:
        return _uniform_404()
    etag = policies.etag(found.version, found.sha256)
    if not_modified(request, etag):
        return response_304(etag)
    return Response(
        content=found.model_dump_json(),
        media_type="application/json",
        headers={"ETag": etag, "Cache-Control": "no-cache"},
    )


@router.get("", response_model=list[PolicySummary], responses={200: {"headers": _NEXT}, **READ})
async def list_policies(
    principal: ReaderDep,
    session: SessionDep,
    project_id: StorableStr,
    page: paging.PageDep,
) -> list[PolicySummary]:
    """One page of the project's policies by name; the next page's cursor is in ``X-Next-Cursor``."""
    after = page.after("policies", str)
    listed, last = await policies.list_policies(session, principal, project_id, after, page.limit)
    page.ends_at("policies", last)
    return listed


@router.get(
    "/{policy_name}/versions",
    response_model=list[PolicyVersionPublic],
    responses={200: {"headers": _NEXT}, **READ},
)
async def policy_versions(
    principal: ReaderDep,
    session: SessionDep,
    policy_name: StorableStr,
    project_id: StorableStr,
    page: paging.PageDep,
) -> list[PolicyVersionPublic]:
    """One page of the versions, newest first; the next page's cursor is in ``X-Next-Cursor``."""
    before = page.after("policy-versions", int)
    found, last = await policies.history(session, principal, project_id, policy_name, before, page.limit)
    page.ends_at("policy-versions", last)
    return found


@router.post(
    "/active-version",
    status_code=201,
    response_model=PolicyVersionPublic,
    responses=WRITE,
    openapi_extra=POLICY_PUBLISH_BODY,
)
async def publish_policy(request: Request, w: WritingDep) -> JSONResponse:
    body = await w.body(request, PolicyPublish)
    published = await policies.publish(w.sessions, w.relay, w.principal, body, w.settings.limits)
    return created(published)


@router.post(
    "/{policy_name}/rollback",
    status_code=201,
    response_model=PolicyVersionPublic,
    responses=WRITE,
    openapi_extra=POLICY_ROLLBACK_BODY,
)
async def rollback_policy(request: Request, policy_name: StorableStr, w: WritingDep) -> JSONResponse:
    body = await w.body(request, PolicyRollback)
    published = await policies.rollback(
        w.sessions, w.relay, w.principal, body.project_id, policy_name, body.version, body.commit_message
    )
    return created(published)


def created(published: PolicyVersionPublic) -> JSONResponse:
    return JSONResponse(published.model_dump(mode="json"), status_code=201, headers=etag_header(published))


def etag_header(published: PolicyVersionPublic) -> dict[str, str]:
    return {"ETag": policies.etag(published.version, published.sha256)}
