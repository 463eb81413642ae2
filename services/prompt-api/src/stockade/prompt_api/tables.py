"""prompt-api's own tables (prompts, skills, their immutable versions, the outbox). Never leave the service.

Foreign keys to the identity tables exist in the migration; the ORM models leave them out so these tables do not
need the identity metadata.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, Index, Integer, LargeBinary, MetaData, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from stockade.identity.db_types import UtcDateTime, new_id, utcnow
from stockade.identity.tables import NAMING
from stockade.runtime.outbox import OutboxColumns


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


class Prompt(Base):
    __tablename__ = "prompts"
    __table_args__ = (UniqueConstraint("project_id", "name", name="uq_prompts_project_id_name"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    project_id: Mapped[str] = mapped_column(String(32))
    name: Mapped[str] = mapped_column(String(128))
    latest_version: Mapped[int] = mapped_column(Integer, default=0)
    active_version: Mapped[int | None] = mapped_column(Integer, default=None)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class PromptVersion(Base):
    __tablename__ = "prompt_versions"
    __table_args__ = (UniqueConstraint("prompt_id", "version", name="uq_prompt_versions_prompt_id_version"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    prompt_id: Mapped[str] = mapped_column(ForeignKey("prompts.id", ondelete="CASCADE"))
    version: Mapped[int] = mapped_column(Integer)
    content: Mapped[Any] = mapped_column(JSON)
    config: Mapped[Any] = mapped_column(JSON, nullable=True)
    sha256: Mapped[str] = mapped_column(String(64))
    commit_message: Mapped[str | None] = mapped_column(Text, default=None)
    published_by: Mapped[str] = mapped_column(String(32))
    published_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class PromptProposal(Base):
    """A version proposed on a Manual review project: pending until an approver approves (it becomes the next
    version, active) or rejects it (with a comment). Version numbers are only allocated on approval."""

    __tablename__ = "prompt_proposals"
    __table_args__ = (Index("ix_prompt_proposals_project_id_status", "project_id", "status", "proposed_at"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    project_id: Mapped[str] = mapped_column(String(32))
    prompt_name: Mapped[str] = mapped_column(String(128))
    content: Mapped[Any] = mapped_column(JSON)
    config: Mapped[Any] = mapped_column(JSON, nullable=True)
    sha256: Mapped[str] = mapped_column(String(64))
    commit_message: Mapped[str | None] = mapped_column(Text, default=None)
    base_version: Mapped[int | None] = mapped_column(Integer, default=None)
    status: Mapped[str] = mapped_column(String(16), default="pending")
    proposed_by: Mapped[str] = mapped_column(String(32))
    proposed_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    decided_by: Mapped[str | None] = mapped_column(String(32), default=None)
    decided_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    comment: Mapped[str | None] = mapped_column(Text, default=None)
    version: Mapped[int | None] = mapped_column(Integer, default=None)


class Skill(Base):
    __tablename__ = "skills"
    __table_args__ = (UniqueConstraint("project_id", "name", name="uq_skills_project_id_name"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    project_id: Mapped[str] = mapped_column(String(32))
    name: Mapped[str] = mapped_column(String(64))
    latest_version: Mapped[int] = mapped_column(Integer, default=0)
    active_version: Mapped[int | None] = mapped_column(Integer, default=None)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class SkillVersion(Base):
    __tablename__ = "skill_versions"
    __table_args__ = (UniqueConstraint("skill_id", "version", name="uq_skill_versions_skill_id_version"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    skill_id: Mapped[str] = mapped_column(ForeignKey("skills.id", ondelete="CASCADE"))
    version: Mapped[int] = mapped_column(Integer)
    skill_md: Mapped[str] = mapped_column(Text)
    front_matter: Mapped[Any] = mapped_column(JSON)
    sha256: Mapped[str] = mapped_column(String(64))
    commit_message: Mapped[str | None] = mapped_column(Text, default=None)
    published_by: Mapped[str] = mapped_column(String(32))
    published_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class SkillFile(Base):
    __tablename__ = "skill_files"

    skill_version_id: Mapped[str] = mapped_column(
        ForeignKey("skill_versions.id", ondelete="CASCADE"), primary_key=True
    )
    path: Mapped[str] = mapped_column(String(512), primary_key=True)
    data: Mapped[bytes] = mapped_column(LargeBinary)
    size: Mapped[int] = mapped_column(Integer)
    sha256: Mapped[str] = mapped_column(String(64))


class OutboxEvent(OutboxColumns, Base):
    """Publish events waiting for (or kept after) the relay; columns from ``stockade.runtime.outbox``."""

    __tablename__ = "outbox"
    __table_args__ = (Index("ix_outbox_created_at", "created_at"),)
