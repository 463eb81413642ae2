"""Skill service functions: listing, the Agent Skills read layout, publish."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from stockade.identity import KeyPrincipal
from stockade.prompt_api import versioning
from stockade.prompt_api.errors import NotFound
from stockade.prompt_api.schemas import (
    SkillDetail,
    SkillFilePublic,
    SkillPublish,
    SkillSummary,
    SkillVersionPublic,
    SkillVersionSummary,
)
from stockade.prompt_api.settings import LimitSettings
from stockade.prompt_api.skill_format import ValidFile, check_skill
from stockade.prompt_api.tables import Skill, SkillFile, SkillVersion
from stockade.runtime.uow import Waker

RESOURCE_KINDS = ("references", "scripts", "assets")


@dataclass(frozen=True, slots=True)
class ResolvedVersion:
    skill: Skill
    version: SkillVersion


def skill_sha256(md: bytes, files: list[ValidFile]) -> str:
    """Hash over SKILL.md and every (path, content hash), in path order."""
    digest = hashlib.sha256()
    digest.update(b"SKILL.md\0" + hashlib.sha256(md).digest())
    for f in files:
        digest.update(f.path.encode() + b"\0" + hashlib.sha256(f.data).digest())
    return digest.hexdigest()


async def list_skills(
    session: AsyncSession, project_id: str, after: str | None, limit: int, active_only: bool = False
) -> tuple[list[SkillSummary], str | None]:
    """One page of the project's skills by name, after ``after``; and the last name if more follow."""
    rows, more = await versioning.page_with_active(
        session, versioning.SKILLS, project_id, after, limit, active_only
    )
    listed = [
        SkillSummary(
            skill_name=s.name,
            description=str((v.front_matter or {}).get("description", "")) if v else "",
            active_version=s.active_version,
            latest_version=s.latest_version,
            sha256=v.sha256 if v else None,
            published_at=v.published_at if v else None,
        )
        for s, v in rows
    ]
    return listed, (rows[-1][0].name if more else None)


async def resolve(session: AsyncSession, project_id: str, name: str, version: int | None) -> ResolvedVersion:
    skill = (
        await session.execute(select(Skill).where(Skill.project_id == project_id, Skill.name == name))
    ).scalar_one_or_none()
    if skill is None:
        raise NotFound(f"no skill {name!r} in this project")
    wanted = version if version is not None else skill.active_version
    row = (
        await session.execute(
            select(SkillVersion).where(SkillVersion.skill_id == skill.id, SkillVersion.version == wanted)
        )
    ).scalar_one_or_none()
    if row is None:
        raise NotFound(f"skill {name!r} has no version {wanted}")
    return ResolvedVersion(skill, row)


async def file_list(session: AsyncSession, version_id: str) -> list[SkillFilePublic]:
    rows = (
        await session.execute(
            select(SkillFile.path, SkillFile.size, SkillFile.sha256)
            .where(SkillFile.skill_version_id == version_id)
            .order_by(SkillFile.path)
        )
    ).all()
    return [SkillFilePublic(path=p, size=s, sha256=h) for p, s, h in rows]


def _public(project_id: str, name: str, v: SkillVersion, files: list[SkillFilePublic]) -> SkillVersionPublic:
    md = v.skill_md.encode()
    listed = [SkillFilePublic(path="SKILL.md", size=len(md), sha256=hashlib.sha256(md).hexdigest()), *files]
    return SkillVersionPublic(
        project_id=project_id,
        skill_name=name,
        version=v.version,
        sha256=v.sha256,
        front_matter=v.front_matter,
        files=listed,
        commit_message=v.commit_message,
        published_at=v.published_at,
        published_by=v.published_by,
    )


async def detail(
    session: AsyncSession,
    project_id: str,
    name: str,
    version: int | None,
    history_before: int | None,
    history_limit: int,
) -> tuple[SkillDetail, int | None]:
    """The version's metadata with one page of the history (newest first, older than ``history_before``), and
    the last version of that page if more follow."""
    resolved = await resolve(session, project_id, name, version)
    files = await file_list(session, resolved.version.id)
    versions, more = await versioning.version_page(
        session, versioning.SKILLS, resolved.skill.id, history_before, history_limit
    )
    history = [
        SkillVersionSummary(
            version=v.version,
            sha256=v.sha256,
            commit_message=v.commit_message,
            published_at=v.published_at,
            published_by=v.published_by,
        )
        for v in versions
    ]
    public = _public(project_id, name, resolved.version, files)
    found = SkillDetail(**public.model_dump(), active_version=resolved.skill.active_version, history=history)
    return found, (versions[-1].version if more else None)


def manifest(files: list[SkillFilePublic]) -> dict[str, list[str]]:
    """The per-skill index.json that agentskills-http reads (resource kinds hold names inside that folder)."""
    out: dict[str, list[str]] = {kind: [] for kind in RESOURCE_KINDS}
    for f in files:
        parts = f.path.split("/")
        if len(parts) == 2 and parts[0] in out:
            out[parts[0]].append(parts[1])
    out["files"] = sorted(["SKILL.md", *(f.path for f in files)])
    return out


async def read_file(session: AsyncSession, version_id: str, path: str) -> tuple[bytes, str]:
    row = (
        await session.execute(
            select(SkillFile.data, SkillFile.sha256).where(
                SkillFile.skill_version_id == version_id, SkillFile.path == path
            )
        )
    ).one_or_none()
    if row is None:
        raise NotFound(f"no file {path!r} in this skill version")
    return bytes(row[0]), str(row[1])


async def publish(
    sessions: async_sessionmaker[AsyncSession],
    relay: Waker | None,
    principal: KeyPrincipal,
    body: SkillPublish,
    limits: LimitSettings,
) -> SkillVersionPublic:
    front, md, files = check_skill(body.skill_name, body.skill_md, body.files, limits)
    async with versioning.publishing(sessions, relay, principal, body.project_id) as session:
        return await insert_version(
            session,
            principal.owner_id,
            body.project_id,
            body.skill_name,
            (body.skill_md, front, skill_sha256(md, files)),
            files,
            body.commit_message,
        )


async def insert_version(
    session: AsyncSession,
    published_by: str,
    project_id: str,
    skill_name: str,
    checked: tuple[str, dict[str, Any], str],
    files: list[ValidFile],
    commit_message: str | None,
) -> SkillVersionPublic:
    """Inside the caller's transaction: allocate the version, insert it and its files, move the active pointer,
    enqueue the event. ``checked`` is (SKILL.md, its front matter, the skill hash), as validated."""
    skill_md, front, sha = checked
    content = {"skill_md": skill_md, "front_matter": front}
    row = await versioning.insert_version(
        session, versioning.SKILLS, published_by, project_id, skill_name, sha, commit_message, content
    )
    session.add_all(
        SkillFile(
            skill_version_id=row.id,
            path=f.path,
            data=f.data,
            size=len(f.data),
            sha256=hashlib.sha256(f.data).hexdigest(),
        )
        for f in files
    )
    await session.flush()
    listed = [
        SkillFilePublic(path=f.path, size=len(f.data), sha256=hashlib.sha256(f.data).hexdigest())
        for f in files
    ]
    return _public(project_id, skill_name, row, listed)
