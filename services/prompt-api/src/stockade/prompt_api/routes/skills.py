"""Skill routes: the layout agentskills-http's HTTPStaticFileSkillProvider reads, plus listing and publish.

Every GET needs a valid key (401) whose owner is a member of ``project_id`` (403); names and paths that look
like traversal are refused with 400 before any lookup.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.responses import JSONResponse
from sqlalchemy.ext.asyncio import AsyncSession

from stockade.identity import KeyPrincipal
from stockade.prompt_api import paging, skills, versioning
from stockade.prompt_api.conditional import not_modified, response_304
from stockade.prompt_api.deps import ReaderDep, SessionDep, WritingDep
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


@dataclass(frozen=True, slots=True)
class _Named:
    """The skill version a read route names: the skill in the path; the project, and a version if not the active
    one, in the query."""

    skill_name: str
    project_id: str
    version: int | None


async def _named(skill_name: str, project_id: StorableStr, version: VersionQuery = None) -> _Named:
    return _Named(skill_name, project_id, version)


NamedDep = Annotated[_Named, Depends(_named)]


async def _resolve(
    session: AsyncSession, principal: KeyPrincipal, named: _Named, path: str | None = None
) -> skills.ResolvedVersion:
    """The named version: the name (and the file's path) checked before any lookup (400), then membership (403),
    then the version (404)."""
    check_skill_name(named.skill_name)
    if path is not None:
        check_path(path)
    await versioning.require_member(session, principal, named.project_id)
    return await skills.resolve(session, named.project_id, named.skill_name, named.version)


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
    principal: ReaderDep,
    session: SessionDep,
    project_id: StorableStr,
    page: paging.PageDep,
) -> list[SkillSummary]:
    """One page of the project's skills by name; the next page's cursor is in ``X-Next-Cursor``."""
    after = page.after("skills", str)
    await versioning.require_member(session, principal, project_id)
    listed, last = await skills.list_skills(session, project_id, after, page.limit)
    page.ends_at("skills", last)
    return listed


@router.get("/index.json", responses={200: {"headers": _NEXT}, **SKILL_READ})
async def skills_index(
    principal: ReaderDep,
    session: SessionDep,
    project_id: StorableStr,
    page: paging.NamesPageDep,
) -> dict[str, list[str]]:
    """Names of the skills with an active version, one page (agentskills-http reads only the first)."""
    after = page.after("skill-names", str)
    await versioning.require_member(session, principal, project_id)
    listed, last = await skills.list_skills(session, project_id, after, page.limit, active_only=True)
    page.ends_at("skill-names", last)
    return {"skills": [s.skill_name for s in listed]}


@router.post(
    "/active-version",
    status_code=201,
    response_model=SkillVersionPublic,
    responses=SKILL_WRITE,
    openapi_extra=SKILL_PUBLISH_BODY,
)
async def publish_skill(request: Request, w: WritingDep) -> JSONResponse:
    body = await w.body(request, SkillPublish)
    published = await skills.publish(w.sessions, w.relay, w.principal, body, w.settings.limits)
    return JSONResponse(published.model_dump(mode="json"), status_code=201)


@router.get("/{skill_name}", response_model=SkillDetail, responses={200: {"headers": _NEXT}, **SKILL_READ})
async def skill_detail(
    principal: ReaderDep,
    session: SessionDep,
    skill_name: str,
    project_id: StorableStr,
    page: paging.PageDep,
    version: VersionQuery = None,
) -> SkillDetail:
    """The version's metadata and one page of ``history`` (``limit``/``cursor`` page the history)."""
    check_skill_name(skill_name)
    before = page.after("skill-versions", int)
    await versioning.require_member(session, principal, project_id)
    found, last = await skills.detail(session, project_id, skill_name, version, before, page.limit)
    page.ends_at("skill-versions", last)
    return found


@router.get(
    "/{skill_name}/SKILL.md",
    response_class=Response,
    responses={200: _SKILL_MD, **NOT_MODIFIED, **SKILL_READ},
)
async def skill_md(request: Request, principal: ReaderDep, session: SessionDep, named: NamedDep) -> Response:
    resolved = await _resolve(session, principal, named)
    data = resolved.version.skill_md.encode()
    tag = f'"{hashlib.sha256(data).hexdigest()}"'
    if not_modified(request, tag):
        return response_304(tag)
    return Response(data, media_type="text/markdown; charset=utf-8", headers=_file_headers("SKILL.md", tag))


@router.get("/{skill_name}/index.json", responses=SKILL_READ)
async def skill_index(principal: ReaderDep, session: SessionDep, named: NamedDep) -> dict[str, Any]:
    resolved = await _resolve(session, principal, named)
    return skills.manifest(await skills.file_list(session, resolved.version.id))


@router.get(
    "/{skill_name}/{path:path}",
    response_class=Response,
    responses={200: _SKILL_FILE, **NOT_MODIFIED, **SKILL_READ},
)
async def skill_file(
    request: Request, principal: ReaderDep, session: SessionDep, named: NamedDep, path: str
) -> Response:
    resolved = await _resolve(session, principal, named, path)
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
