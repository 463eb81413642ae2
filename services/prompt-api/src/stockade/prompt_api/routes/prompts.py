"""Prompt routes (spec 4.1): the uniform read, listing, history, publish, rollback."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse

from stockade.prompt_api import paging, prompts
from stockade.prompt_api.conditional import not_modified, response_304
from stockade.prompt_api.deps import PromptApiState, ReaderDep, SessionDep, WritingDep
from stockade.prompt_api.responses import PROMPT_PUBLISH_BODY, PROMPT_ROLLBACK_BODY, READ, WRITE
from stockade.prompt_api.schemas import PromptPublish, PromptRollback, PromptSummary, PromptVersionPublic
from stockade.runtime.app import service_of
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
    """The hot path: no dependency resolution or parameter models per request (a measurable share of the server's
    CPU under the read load: the service README, "Where the time went"); the three query parameters are read as plain strings, and the reader is prompt-api's own state (``read_path``)."""
    query = request.query_params
    values = (query.get("api_key"), query.get("project_id"), query.get("prompt_name"))
    if not all(value is None or is_storable(value) for value in values):
        # A NUL cannot be bound as PostgreSQL text: it would fail the statement of every request batched with
        # this one. Refused here, with the same 404 (it says nothing about what exists).
        return Response(content=UNIFORM_404, status_code=404, media_type="application/json")
    found = await service_of(request, PromptApiState).reader.read(*values)
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
    principal: ReaderDep,
    session: SessionDep,
    project_id: StorableStr,
    page: paging.PageDep,
) -> list[PromptSummary]:
    """One page of the project's prompts by name; the next page's cursor is in ``X-Next-Cursor``."""
    after = page.after("prompts", str)
    listed, last = await prompts.list_prompts(session, principal, project_id, after, page.limit)
    page.ends_at("prompts", last)
    return listed


@router.get(
    "/{prompt_name}/versions",
    response_model=list[PromptVersionPublic],
    responses={200: {"headers": _NEXT}, **READ},
)
async def prompt_versions(
    principal: ReaderDep,
    session: SessionDep,
    prompt_name: StorableStr,
    project_id: StorableStr,
    page: paging.PageDep,
) -> list[PromptVersionPublic]:
    """One page of the versions, newest first; the next page's cursor is in ``X-Next-Cursor``."""
    before = page.after("prompt-versions", int)
    found, last = await prompts.history(session, principal, project_id, prompt_name, before, page.limit)
    page.ends_at("prompt-versions", last)
    return found


@router.post(
    "/active-prompt-version",
    status_code=201,
    response_model=PromptVersionPublic,
    responses=WRITE,
    openapi_extra=PROMPT_PUBLISH_BODY,
)
async def publish_prompt(request: Request, w: WritingDep) -> JSONResponse:
    body = await w.body(request, PromptPublish)
    published = await prompts.publish(w.sessions, w.relay, w.principal, body, w.settings.limits)
    return _created(published)


@router.post(
    "/{prompt_name}/rollback",
    status_code=201,
    response_model=PromptVersionPublic,
    responses=WRITE,
    openapi_extra=PROMPT_ROLLBACK_BODY,
)
async def rollback_prompt(request: Request, prompt_name: StorableStr, w: WritingDep) -> JSONResponse:
    body = await w.body(request, PromptRollback)
    published = await prompts.rollback(
        w.sessions, w.relay, w.principal, body.project_id, prompt_name, body.version, body.commit_message
    )
    return _created(published)


def _created(published: PromptVersionPublic) -> JSONResponse:
    return JSONResponse(
        published.model_dump(mode="json"),
        status_code=201,
        headers={"ETag": prompts.etag(published.version, published.sha256)},
    )
