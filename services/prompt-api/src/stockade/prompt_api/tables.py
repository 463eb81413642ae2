"""prompt-api's own tables (prompts, skills, guardrail policies, their immutable versions, the outbox). Never
leave the service.

Foreign keys to the identity tables exist in the migration; the ORM models leave them out so these tables do not
need the identity metadata.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import JSON, ForeignKey, Index, Integer, LargeBinary, MetaData, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, declared_attr, mapped_column

from stockade.identity.tables import NAMING
from stockade.runtime.db_types import UtcDateTime, new_id, utcnow
from stockade.runtime.outbox import OutboxColumns


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


# Column mixins. A mixin's columns would come after the class's own; ``sort_order=1`` puts them where the
# migrations have them (after the kind's own content), so each table is exactly the migrated one.


class _Subject:
    """The columns of a prompt or a skill: a name in a project, its latest and its active version number."""

    name_length: ClassVar[int]

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    project_id: Mapped[str] = mapped_column(String(32))

    @declared_attr
    def name(cls) -> Mapped[str]:
        return mapped_column(String(cls.name_length))

    latest_version: Mapped[int] = mapped_column(Integer, default=0, sort_order=1)
    active_version: Mapped[int | None] = mapped_column(Integer, default=None, sort_order=1)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, sort_order=1)

    @declared_attr.directive
    def __table_args__(cls) -> tuple[Any, ...]:
        table = cls.__tablename__  # type: ignore[attr-defined]
        return (UniqueConstraint("project_id", "name", name=f"uq_{table}_project_id_name"),)


class _Published:
    """What every immutable version records after its own content: its hash and who published it when."""

    sha256: Mapped[str] = mapped_column(String(64), sort_order=1)
    commit_message: Mapped[str | None] = mapped_column(Text, default=None, sort_order=1)
    published_by: Mapped[str] = mapped_column(String(32), sort_order=1)
    published_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, sort_order=1)


class _Proposed:
    """A proposal's review state, after its own content (see :class:`PromptProposal`)."""

    sha256: Mapped[str] = mapped_column(String(64), sort_order=1)
    commit_message: Mapped[str | None] = mapped_column(Text, default=None, sort_order=1)
    base_version: Mapped[int | None] = mapped_column(Integer, default=None, sort_order=1)
    status: Mapped[str] = mapped_column(String(16), default="pending", sort_order=1)
    proposed_by: Mapped[str] = mapped_column(String(32), sort_order=1)
    proposed_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, sort_order=1)
    decided_by: Mapped[str | None] = mapped_column(String(32), default=None, sort_order=1)
    decided_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None, sort_order=1)
    comment: Mapped[str | None] = mapped_column(Text, default=None, sort_order=1)
    version: Mapped[int | None] = mapped_column(Integer, default=None, sort_order=1)


class _StoredFile:
    """A file beside SKILL.md, after the key of what it belongs to."""

    path: Mapped[str] = mapped_column(String(512), primary_key=True, sort_order=1)
    data: Mapped[bytes] = mapped_column(LargeBinary, sort_order=1)
    size: Mapped[int] = mapped_column(Integer, sort_order=1)
    sha256: Mapped[str] = mapped_column(String(64), sort_order=1)


class Prompt(_Subject, Base):
    __tablename__ = "prompts"
    name_length = 128


class PromptVersion(_Published, Base):
    __tablename__ = "prompt_versions"
    __table_args__ = (UniqueConstraint("prompt_id", "version", name="uq_prompt_versions_prompt_id_version"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    prompt_id: Mapped[str] = mapped_column(ForeignKey("prompts.id", ondelete="CASCADE"))
    version: Mapped[int] = mapped_column(Integer)
    content: Mapped[Any] = mapped_column(JSON)
    config: Mapped[Any] = mapped_column(JSON, nullable=True)


class PromptProposal(_Proposed, Base):
    """A version proposed on a Manual review project: pending until an approver approves (it becomes the next
    version, active) or rejects it (with a comment). Version numbers are only allocated on approval."""

    __tablename__ = "prompt_proposals"
    __table_args__ = (Index("ix_prompt_proposals_project_id_status", "project_id", "status", "proposed_at"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    project_id: Mapped[str] = mapped_column(String(32))
    prompt_name: Mapped[str] = mapped_column(String(128))
    content: Mapped[Any] = mapped_column(JSON)
    config: Mapped[Any] = mapped_column(JSON, nullable=True)


class Skill(_Subject, Base):
    __tablename__ = "skills"
    name_length = 64


class SkillVersion(_Published, Base):
    __tablename__ = "skill_versions"
    __table_args__ = (UniqueConstraint("skill_id", "version", name="uq_skill_versions_skill_id_version"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    skill_id: Mapped[str] = mapped_column(ForeignKey("skills.id", ondelete="CASCADE"))
    version: Mapped[int] = mapped_column(Integer)
    skill_md: Mapped[str] = mapped_column(Text)
    front_matter: Mapped[Any] = mapped_column(JSON)


class SkillFile(_StoredFile, Base):
    __tablename__ = "skill_files"

    skill_version_id: Mapped[str] = mapped_column(
        ForeignKey("skill_versions.id", ondelete="CASCADE"), primary_key=True
    )


class SkillProposal(_Proposed, Base):
    """A skill version proposed on a Manual review project, as :class:`PromptProposal`; its files are in
    ``skill_proposal_files``. Validated when proposed, so approving publishes exactly what was reviewed."""

    __tablename__ = "skill_proposals"
    __table_args__ = (Index("ix_skill_proposals_project_id_status", "project_id", "status", "proposed_at"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    project_id: Mapped[str] = mapped_column(String(32))
    skill_name: Mapped[str] = mapped_column(String(64))
    skill_md: Mapped[str] = mapped_column(Text)
    front_matter: Mapped[Any] = mapped_column(JSON)


class SkillProposalFile(_StoredFile, Base):
    __tablename__ = "skill_proposal_files"

    proposal_id: Mapped[str] = mapped_column(
        ForeignKey("skill_proposals.id", ondelete="CASCADE"), primary_key=True
    )


class Policy(_Subject, Base):
    """A guardrail policy (a guardrails configuration) of a project, by name."""

    __tablename__ = "policies"
    name_length = 128


class PolicyVersion(_Published, Base):
    """An immutable version of a policy: the YAML text exactly as published (validated before it was stored)."""

    __tablename__ = "policy_versions"
    __table_args__ = (UniqueConstraint("policy_id", "version", name="uq_policy_versions_policy_id_version"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    policy_id: Mapped[str] = mapped_column(ForeignKey("policies.id", ondelete="CASCADE"))
    version: Mapped[int] = mapped_column(Integer)
    yaml: Mapped[str] = mapped_column(Text)


class PolicyProposal(_Proposed, Base):
    """A policy version proposed on a Manual review project, as :class:`PromptProposal`."""

    __tablename__ = "policy_proposals"
    __table_args__ = (Index("ix_policy_proposals_project_id_status", "project_id", "status", "proposed_at"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    project_id: Mapped[str] = mapped_column(String(32))
    policy_name: Mapped[str] = mapped_column(String(128))
    yaml: Mapped[str] = mapped_column(Text)


class OutboxEvent(OutboxColumns, Base):
    """Publish events waiting for (or kept after) the relay; columns from ``stockade.runtime.outbox``."""

    __tablename__ = "outbox"
    __table_args__ = (Index("ix_outbox_created_at", "created_at"),)
