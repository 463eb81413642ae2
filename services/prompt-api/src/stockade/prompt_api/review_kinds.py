"""The two kinds of Manual review (:mod:`stockade.prompt_api.reviews`): prompt versions and skill versions."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from stockade.prompt_api import prompts, skills
from stockade.prompt_api.reviews import Checked, ReviewKind, columns_of
from stockade.prompt_api.schemas import (
    PromptProposalCreate,
    PromptProposalPublic,
    PromptVersionPublic,
    SkillFilePublic,
    SkillProposalCreate,
    SkillProposalPublic,
    SkillVersionPublic,
)
from stockade.prompt_api.settings import LimitSettings
from stockade.prompt_api.skill_format import ValidFile, check_skill
from stockade.prompt_api.tables import Prompt, PromptProposal, Skill, SkillProposal, SkillProposalFile


class _PromptReviews(
    ReviewKind[PromptProposal, PromptProposalCreate, PromptProposalPublic, PromptVersionPublic]
):
    """A prompt proposal is the content (text or chat messages) and config."""

    noun, table, subject = "prompt", PromptProposal, Prompt
    create, public = PromptProposalCreate, PromptProposalPublic

    def check(self, name: str, body: PromptProposalCreate, limits: LimitSettings) -> Checked:
        content = prompts.stored_content(body.content)
        prompts.check_size(content, body.config, limits)
        sha = prompts.content_sha256(content, body.config)
        return Checked({"prompt_name": name, "content": content, "config": body.config, "sha256": sha})

    async def store(
        self, session: AsyncSession, row: PromptProposal, checked: Checked
    ) -> PromptProposalPublic:
        return PromptProposalPublic.model_validate(columns_of(row))

    async def views(
        self, session: AsyncSession, rows: Sequence[PromptProposal]
    ) -> list[PromptProposalPublic]:
        return [PromptProposalPublic.model_validate(columns_of(p)) for p in rows]

    async def publish(
        self, session: AsyncSession, owner_id: str, row: PromptProposal, message: str
    ) -> PromptVersionPublic:
        return await prompts.insert_version(
            session, owner_id, row.project_id, row.prompt_name, row.content, row.config, message
        )


class _SkillReviews(ReviewKind[SkillProposal, SkillProposalCreate, SkillProposalPublic, SkillVersionPublic]):
    """A skill proposal is SKILL.md (its front matter parsed) and the files beside it, stored in
    ``skill_proposal_files``."""

    noun, table, subject = "skill", SkillProposal, Skill
    create, public = SkillProposalCreate, SkillProposalPublic

    def check(self, name: str, body: SkillProposalCreate, limits: LimitSettings) -> Checked:
        front, md, files = check_skill(name, body.skill_md, body.files, limits)
        sha = skills.skill_sha256(md, files)
        columns = {"skill_name": name, "skill_md": body.skill_md, "front_matter": front, "sha256": sha}
        return Checked(columns, files)

    async def store(self, session: AsyncSession, row: SkillProposal, checked: Checked) -> SkillProposalPublic:
        hashes = [hashlib.sha256(f.data).hexdigest() for f in checked.files]
        session.add_all(
            SkillProposalFile(proposal_id=row.id, path=f.path, data=f.data, size=len(f.data), sha256=sha)
            for f, sha in zip(checked.files, hashes, strict=True)
        )
        await session.flush()
        listed = [
            SkillFilePublic(path=f.path, size=len(f.data), sha256=sha)
            for f, sha in zip(checked.files, hashes, strict=True)
        ]
        return SkillProposalPublic.model_validate({**columns_of(row), "files": listed})

    async def views(self, session: AsyncSession, rows: Sequence[SkillProposal]) -> list[SkillProposalPublic]:
        files: dict[str, list[SkillFilePublic]] = {p.id: [] for p in rows}
        if files:
            f = SkillProposalFile
            stored = await session.execute(
                select(f.proposal_id, f.path, f.size, f.sha256)
                .where(f.proposal_id.in_(list(files)))
                .order_by(f.proposal_id, f.path)
            )
            for pid, path, size, sha in stored.all():
                files[pid].append(SkillFilePublic(path=path, size=size, sha256=sha))
        return [SkillProposalPublic.model_validate({**columns_of(p), "files": files[p.id]}) for p in rows]

    async def publish(
        self, session: AsyncSession, owner_id: str, row: SkillProposal, message: str
    ) -> SkillVersionPublic:
        f = SkillProposalFile
        stored = await session.execute(select(f.path, f.data).where(f.proposal_id == row.id).order_by(f.path))
        files = [ValidFile(str(path), bytes(data)) for path, data in stored.all()]
        checked = (row.skill_md, row.front_matter, row.sha256)
        return await skills.insert_version(
            session, owner_id, row.project_id, row.skill_name, checked, files, message
        )


PROMPTS = _PromptReviews()
SKILLS = _SkillReviews()
