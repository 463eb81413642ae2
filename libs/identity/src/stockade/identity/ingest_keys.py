"""Verification of per-project ingest keys (scope ``ingest``) for guardrail-ingest, from current rows.

guardrail-ingest holds no database: it hashes the presented key and asks the key owner (model-api) on the bus,
which calls :func:`verify_ingest_key` with the key id and the SHA-256. The plaintext never leaves the ingest
process. A key passes when it exists, its hash matches (constant time), it is not revoked, it is an ingest key
bound to a project, and its owner is still a member of that project.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from stockade.identity.access import matching_key, project_access, usable
from stockade.identity.keys import PresentedKey
from stockade.identity.tables import Scope


@dataclass(frozen=True, slots=True)
class IngestKeyCheck:
    """The answer for one ingest key: a value with a reason, never an exception."""

    valid: bool
    reason: str
    key_id: str
    project_id: str | None = None
    owner_id: str | None = None


async def verify_ingest_key(session: AsyncSession, key_id: str, key_hash: str) -> IngestKeyCheck:
    """Whether the key with this id and SHA-256 (hex) may send run events, and for which project."""
    row = await matching_key(session, PresentedKey(key_id, key_hash))
    if row is None:
        return IngestKeyCheck(False, "unknown key", key_id)
    if not usable(row.revoked_at, row.expires_at):
        return IngestKeyCheck(False, "the key is revoked", key_id)
    if row.scope != Scope.INGEST.value or row.project_id is None:
        return IngestKeyCheck(False, "not an ingest key (create one with scope ingest and a project)", key_id)
    if not (await project_access(session, row.owner_id, row.project_id)).project_member:
        return IngestKeyCheck(False, "the key's owner is no longer a member of its project", key_id)
    return IngestKeyCheck(True, "ingest key", key_id, project_id=row.project_id, owner_id=row.owner_id)
