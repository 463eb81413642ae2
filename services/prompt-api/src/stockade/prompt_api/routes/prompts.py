"""Prompt routes (spec 4.1): the uniform read, listing, history, publish, rollback."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse

from stockade.prompt_api import paging, prompts
from stockade.prompt_api.body import parse_body
from stockade.prompt_api.conditional import not_modified, response_304
from stockade.prompt_api.deps import (
    ReaderDep,
    RelayDep,
    SessionDep,
    SessionsDep,
    SettingsDep,
    WriterDep,
)
from stockade.prompt_api.read_path import ActivePromptReader
from stockade.prompt_api.responses import PROMPT_PUBLISH_BODY, PROMPT_ROLLBACK_BODY, READ, WRITE
from stockade.prompt_api.schemas import PromptPublish, PromptRollback, PromptSummary, PromptVersionPublic
from stockade.runtime.storable import StorableStr, is_storable

router = APIRouter(prefix="/prompts", tags=["prompts"])

# The one answer of the read endpoint to every failure: byte for byte the same, whatever the cause.
UNIFORM_404 = b'{"error":{"code":"not_found","message":"not found"}}'


_READ_PARAMETERS = [
    {"name": name, "in": "query", "required": False, "schema": {"type": "string"}, "description": text}
    for name, text in (
        ("api_key", "The API key (this endpoint takes it in the query string only, spec 4.1)."),
        ("project_id", "The project's id."),
        ("prompt_name", "The prompt's name within the project."),
    )
]


@router.get(
    "/active-prompt-version",
    response_model=PromptVersionPublic,
    responses={404: {"description": "Every failure, byte for byte the same body."}},
    openapi_extra={"parameters": _READ_PARAMETERS},
)
async def read_active_prompt_version(request: Request) -> Response:
    """The hot path: no dependency resolution or parameter models per request (py-spy: ~10% of its server CPU); the
    three query parameters are read as plain strings, and the reader lives on ``app.state`` (``read_path``)."""
    query = request.query_params
    values = (query.get("api_key"), query.get("project_id"), query.get("prompt_name"))
    if not all(value is None or is_storable(value) for value in values):
        # A NUL cannot be bound as PostgreSQL text: it would fail the statement of every request batched with
        # this one. Refused here, with the same 404 (it says nothing about what exists).
        return Response(content=UNIFORM_404, status_code=404, media_type="application/json")
    reader: ActivePromptReader = request.app.state.reader
    found = await reader.read(*values)
    if found is None:
        return Response(content=UNIFORM_404, status_code=404, media_type="application/json")
    if not_modified(request, found.etag):
        return response_304(found.etag)
    return Response(
        content=found.body,
        media_type="application/json",
        headers={"ETag": found.etag, "Cache-Control": "no-cache"},
    )


_NEXT = {"X-Next-Cursor": {"description": "The next page's cursor (absent on the last page)."}}


@router.get("", response_model=list[PromptSummary], responses={200: {"headers": _NEXT}, **READ})
async def list_prompts(
    request: Request,
    response: Response,
    principal: ReaderDep,
    session: SessionDep,
    project_id: StorableStr,
    limit: paging.Limit = paging.DEFAULT_LIMIT,
    cursor: paging.CursorQuery = None,
) -> list[PromptSummary]:
    """One page of the project's prompts by name; the next page's cursor is in ``X-Next-Cursor``."""
    after = paging.decode(cursor, "prompts", str)
    listed, last = await prompts.list_prompts(session, principal, project_id, after, limit)
    paging.set_next(request, response, None if last is None else paging.encode("prompts", last))
    return listed


@router.get(
    "/{prompt_name}/versions",
    response_model=list[PromptVersionPublic],
    responses={200: {"headers": _NEXT}, **READ},
)
async def prompt_versions(
    request: Request,
    response: Response,
    principal: ReaderDep,
    session: SessionDep,
    prompt_name: StorableStr,
    project_id: StorableStr,
    limit: paging.Limit = paging.DEFAULT_LIMIT,
    cursor: paging.CursorQuery = None,
) -> list[PromptVersionPublic]:
    """One page of the versions, newest first; the next page's cursor is in ``X-Next-Cursor``."""
    before = paging.decode(cursor, "prompt-versions", int)
    found, last = await prompts.history(session, principal, project_id, prompt_name, before, limit)
    paging.set_next(request, response, None if last is None else paging.encode("prompt-versions", last))
    return found


@router.post(
    "/active-prompt-version",
    status_code=201,
    response_model=PromptVersionPublic,
    responses=WRITE,
    openapi_extra=PROMPT_PUBLISH_BODY,
)
async def publish_prompt(
    request: Request, principal: WriterDep, sessions: SessionsDep, settings: SettingsDep, relay: RelayDep
) -> JSONResponse:
    body = await parse_body(request, PromptPublish, settings.limits.max_body_bytes)
    published = await prompts.publish(sessions, principal, body, settings.limits)
    if relay is not None:
        relay.wake()
    return _created(published)


@router.post(
    "/{prompt_name}/rollback",
    status_code=201,
    response_model=PromptVersionPublic,
    responses=WRITE,
    openapi_extra=PROMPT_ROLLBACK_BODY,
)
async def rollback_prompt(
    request: Request,
    prompt_name: StorableStr,
    principal: WriterDep,
    sessions: SessionsDep,
    settings: SettingsDep,
    relay: RelayDep,
) -> JSONResponse:
    body = await parse_body(request, PromptRollback, settings.limits.max_body_bytes)
    published = await prompts.rollback(
        sessions, principal, body.project_id, prompt_name, body.version, body.commit_message
    )
    if relay is not None:
        relay.wake()
    return _created(published)


def _created(published: PromptVersionPublic) -> JSONResponse:
    return JSONResponse(
        published.model_dump(mode="json"),
        status_code=201,
        headers={"ETag": prompts.etag(published.version, published.sha256)},
    )
