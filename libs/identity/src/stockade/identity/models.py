"""Public models of stockade.identity: what leaves the package (table models never do)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field


class _Public(BaseModel):
    model_config = ConfigDict(from_attributes=True, frozen=True)


class OrganisationPublic(_Public):
    id: str
    name: str
    created_at: datetime


class UserPublic(_Public):
    id: str
    email: str
    created_at: datetime


class ProjectPublic(_Public):
    id: str
    organisation_id: str
    name: str
    flow: str
    created_at: datetime


class ApiKeyPublic(_Public):
    id: str
    owner_id: str
    scope: str | None = Field(
        description="read, write, ingest (a per-project ingest key), or null (a key from before scopes: reads only)"
    )
    deployment: str
    display: str = Field(description="stk_<key id>...<last four>; never usable as a key")
    created_at: datetime
    revoked_at: datetime | None
    project_id: str | None = Field(default=None, description="Ingest keys only: the project they send for.")


class ApiKeyCreated(ApiKeyPublic):
    key: str = Field(description="The plaintext key. Shown once; only its SHA-256 is stored.")
