"""Skill routes: the layout agentskills-http's HTTPStaticFileSkillProvider reads, plus listing and publish.

Every GET needs a valid key (401) whose owner is a member of ``project_id`` (403); names and paths that look
like traversal are refused with 400 before any lookup.
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import JSONResponse

from stockade.prompt_api import paging, skills
from stockade.prompt_api.body import parse_body
from stockade.prompt_api.conditional import not_modified, response_304
from stockade.prompt_api.deps import ReaderDep, RelayDep, SessionDep, SessionsDep, SettingsDep, WriterDep
from stockade.prompt_api.responses import NOT_MODIFIED, SKILL_PUBLISH_BODY, SKILL_READ, SKILL_WRITE
from stockade.prompt_api.schemas import (
    MAX_VERSION,
    SkillDetail,
    SkillPublish,
    SkillSummary,
    SkillVersionPublic,
)
from stockade.prompt_api.skill_format import check_path, check_skill_name
from stockade.runtime.storable import StorableStr

router = APIRouter(prefix="/skills", tags=["skills"])

VersionQuery = Annotated[
    int | None, Query(ge=1, le=MAX_VERSION, description="An earlier version instead of the active one.")
]


_NEXT = {"X-Next-Cursor": {"description": "The next page's cursor (absent on the last page)."}}
_SKILL_MD = {
    "description": "The raw SKILL.md, as an attachment.",
    "content": {"text/markdown": {"schema": {"type": "string"}}},
}
_SKILL_FILE = {
    "description": "The raw bytes of the file, as an attachment, with the media type its name implies.",
    "content": {"*/*": {"schema": {"type": "string", "format": "binary"}}},
}


@router.get("", response_model=list[SkillSummary], responses={200: {"headers": _NEXT}, **SKILL_READ})
async def list_skills(
    request: Request,
    response: Response,
    principal: ReaderDep,
    session: SessionDep,
    project_id: StorableStr,
    limit: paging.Limit = paging.DEFAULT_LIMIT,
    cursor: paging.CursorQuery = None,
) -> list[SkillSummary]:
    """One page of the project's skills by name; the next page's cursor is in ``X-Next-Cursor``."""
    after = paging.decode(cursor, "skills", str)
    await skills.require_member(session, principal, project_id)
    listed, last = await skills.list_skills(session, project_id, after, limit)
    paging.set_next(request, response, None if last is None else paging.encode("skills", last))
    return listed


@router.get("/index.json", responses={200: {"headers": _NEXT}, **SKILL_READ})
async def skills_index(
    request: Request,
    response: Response,
    principal: ReaderDep,
    session: SessionDep,
    project_id: StorableStr,
    limit: paging.NamesLimit = paging.NAMES_DEFAULT_LIMIT,
    cursor: paging.CursorQuery = None,
) -> dict[str, list[str]]:
    """Names of the skills with an active version, one page (agentskills-http reads only the first)."""
    after = paging.decode(cursor, "skill-names", str)
    await skills.require_member(session, principal, project_id)
    listed, last = await skills.list_skills(session, project_id, after, limit, active_only=True)
    paging.set_next(request, response, None if last is None else paging.encode("skill-names", last))
    return {"skills": [s.skill_name for s in listed]}


@router.post(
    "/active-version",
    status_code=201,
    response_model=SkillVersionPublic,
    responses=SKILL_WRITE,
    openapi_extra=SKILL_PUBLISH_BODY,
)
async def publish_skill(
    request: Request, principal: WriterDep, sessions: SessionsDep, settings: SettingsDep, relay: RelayDep
) -> JSONResponse:
    body = await parse_body(request, SkillPublish, settings.limits.max_body_bytes)
    published = await skills.publish(sessions, principal, body, settings.limits)
    if relay is not None:
        relay.wake()
    return JSONResponse(published.model_dump(mode="json"), status_code=201)


@router.get("/{skill_name}", response_model=SkillDetail, responses={200: {"headers": _NEXT}, **SKILL_READ})
async def skill_detail(
    request: Request,
    response: Response,
    principal: ReaderDep,
    session: SessionDep,
    skill_name: str,
    project_id: StorableStr,
    version: VersionQuery = None,
    limit: paging.Limit = paging.DEFAULT_LIMIT,
    cursor: paging.CursorQuery = None,
) -> SkillDetail:
    """The version's metadata and one page of ``history`` (``limit``/``cursor`` page the history)."""
    check_skill_name(skill_name)
    before = paging.decode(cursor, "skill-versions", int)
    await skills.require_member(session, principal, project_id)
    found, last = await skills.detail(session, project_id, skill_name, version, before, limit)
    paging.set_next(request, response, None if last is None else paging.encode("skill-versions", last))
    return found


@router.get(
    "/{skill_name}/SKILL.md",
    response_class=Response,
    responses={200: _SKILL_MD, **NOT_MODIFIED, **SKILL_READ},
)
async def skill_md(
    request: Request,
    principal: ReaderDep,
    session: SessionDep,
    skill_name: str,
    project_id: StorableStr,
    version: VersionQuery = None,
) -> Response:
    check_skill_name(skill_name)
    await skills.require_member(session, principal, project_id)
    resolved = await skills.resolve(session, project_id, skill_name, version)
    data = resolved.version.skill_md.encode()
    tag = f'"{hashlib.sha256(data).hexdigest()}"'
    if not_modified(request, tag):
        return response_304(tag)
    return Response(data, media_type="text/markdown; charset=utf-8", headers=_file_headers("SKILL.md", tag))


@router.get("/{skill_name}/index.json", responses=SKILL_READ)
async def skill_index(
    principal: ReaderDep,
    session: SessionDep,
    skill_name: str,
    project_id: StorableStr,
    version: VersionQuery = None,
) -> dict[str, Any]:
    check_skill_name(skill_name)
    await skills.require_member(session, principal, project_id)
    resolved = await skills.resolve(session, project_id, skill_name, version)
    return skills.manifest(await skills.file_list(session, resolved.version.id))


@router.get(
    "/{skill_name}/{path:path}",
    response_class=Response,
    responses={200: _SKILL_FILE, **NOT_MODIFIED, **SKILL_READ},
)
async def skill_file(
    request: Request,
    principal: ReaderDep,
    session: SessionDep,
    skill_name: str,
    path: str,
    project_id: StorableStr,
    version: VersionQuery = None,
) -> Response:
    check_skill_name(skill_name)
    check_path(path)
    await skills.require_member(session, principal, project_id)
    resolved = await skills.resolve(session, project_id, skill_name, version)
    data, sha = await skills.read_file(session, resolved.version.id, path)
    tag = f'"{sha}"'
    if not_modified(request, tag):
        return response_304(tag)
    return Response(data, media_type=_media_type(path), headers=_file_headers(path.rsplit("/", 1)[-1], tag))


# A skill file is data for agents, never a page: a browser that opens one (a published page.html or image.svg,
# with the key in the query string) downloads it instead of rendering it, and a sandbox with no sources would
# keep its script from running or sending anything even if it rendered. Names are [A-Za-z0-9._-] (check_path).
FILE_CSP = "sandbox; default-src 'none'"


def _file_headers(name: str, etag: str) -> dict[str, str]:
    return {
        "ETag": etag,
        "Cache-Control": "no-cache",
        "Content-Disposition": f'attachment; filename="{name}"',
        "Content-Security-Policy": FILE_CSP,
        "X-Content-Type-Options": "nosniff",
    }


def _media_type(path: str) -> str:
    import mimetypes

    guessed, _ = mimetypes.guess_type(path)
    if path.endswith((".md", ".markdown")):
        return "text/markdown; charset=utf-8"
    if guessed and guessed.startswith("text/"):
        return f"{guessed}; charset=utf-8"
    return guessed or "application/octet-stream"
