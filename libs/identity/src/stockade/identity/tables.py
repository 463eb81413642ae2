"""Table models of stockade.identity: a published schema over the database the services share.

Only stockade.identity's functions write these tables (services and the CLI call them). Other packages may read
them, and do: prompt-api's key and membership checks (``prompts``, and ``read_batch`` in SQL by table name),
model-api's ``project_directory`` and platform audit; a change here is a change to their reads. Services build
their own tables on ``NAMING``. Callers of identity's functions get the *Public models, never these rows."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from sqlalchemy import ForeignKey, Index, MetaData, String, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from stockade.runtime.db_types import UtcDateTime, new_id, utcnow

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Flow(StrEnum):
    DIRECT = "direct"
    MANUAL_REVIEW = "manual-review"


class Scope(StrEnum):
    READ = "read"
    WRITE = "write"
    INGEST = "ingest"  # a per-project ingest key: sends guardrail run events of one project, nothing else


class Deployment(StrEnum):
    ONPREM = "onprem"
    HOSTED = "hosted"


APPROVER_TAG = "approver"


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


class Organisation(Base):
    __tablename__ = "organisations"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class User(Base):
    __tablename__ = "users"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    email: Mapped[str] = mapped_column(String(320), unique=True)
    password_hash: Mapped[str | None] = mapped_column(String(255), default=None)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class OrganisationMember(Base):
    __tablename__ = "organisation_members"

    organisation_id: Mapped[str] = mapped_column(
        ForeignKey("organisations.id", ondelete="CASCADE"), primary_key=True
    )
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class Project(Base):
    __tablename__ = "projects"
    __table_args__ = (UniqueConstraint("organisation_id", "name", name="uq_projects_organisation_id_name"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    organisation_id: Mapped[str] = mapped_column(
        ForeignKey("organisations.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(200))
    flow: Mapped[str] = mapped_column(String(20), default=Flow.DIRECT.value)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class ProjectMember(Base):
    __tablename__ = "project_members"

    project_id: Mapped[str] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class ProjectTag(Base):
    __tablename__ = "project_tags"

    project_id: Mapped[str] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    tag: Mapped[str] = mapped_column(String(40), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class ApiKey(Base):
    __tablename__ = "api_keys"
    __table_args__ = (
        Index("ix_api_keys_owner_id", "owner_id"),
        Index("ix_api_keys_console_session_id", "console_session_id"),
    )

    id: Mapped[str] = mapped_column(String(12), primary_key=True)
    owner_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    scope: Mapped[str | None] = mapped_column(String(10), default=None)
    deployment: Mapped[str] = mapped_column(String(10), default=Deployment.ONPREM.value)
    last_four: Mapped[str] = mapped_column(String(4))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    # Set only on ingest keys (scope ``ingest``): the one project whose run events the key may send.
    project_id: Mapped[str | None] = mapped_column(
        ForeignKey("projects.id", ondelete="CASCADE"), default=None
    )
    # Set only on a console session's short-lived credential (``stockade.identity.session_keys``): it stops
    # working at ``expires_at`` and when that session ends. Other keys have neither.
    expires_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    console_session_id: Mapped[str | None] = mapped_column(String(32), default=None)


class PlatformAdmin(Base):
    """A user holding the platform administrator role (docs/permissions.md): platform-wide settings."""

    __tablename__ = "platform_admins"

    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    granted_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
