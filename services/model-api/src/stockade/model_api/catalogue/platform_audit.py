"""The platform audit trail: who changed a platform-wide setting, and when (docs/permissions.md).

:func:`record` adds the row to the caller's transaction (the action's unit of work), so a change and its audit
record commit together or not at all. :func:`recent` is what platform administrators read.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from stockade.identity.tables import User
from stockade.model_api.tables import PlatformAudit

MAX_READ = 500


@dataclass(frozen=True, slots=True)
class AuditRecord:
    id: str
    at: datetime
    actor_id: str
    actor_email: str | None
    action: str
    target: str
    details: dict[str, Any]

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "at": self.at.isoformat(),
            "actor": {"id": self.actor_id, "email": self.actor_email},
            "action": self.action,
            "target": self.target,
            "details": self.details,
        }


def record(db: AsyncSession, actor: str, action: str, target: str, **details: Any) -> None:
    """Add one audit row to the session's transaction (committed with the change it describes)."""
    db.add(PlatformAudit(actor_id=actor, action=action, target=target[:400], details=details))


async def recent(db: AsyncSession, limit: int = 100) -> list[AuditRecord]:
    """The newest records first, at most ``limit`` (capped at :data:`MAX_READ`), with the actor's e-mail."""
    rows = await db.execute(
        select(PlatformAudit, User.email)
        .outerjoin(User, User.id == PlatformAudit.actor_id)
        .order_by(PlatformAudit.at.desc(), PlatformAudit.id.desc())
        .limit(max(1, min(limit, MAX_READ)))
    )
    return [
        AuditRecord(a.id, a.at, a.actor_id, email, a.action, a.target, dict(a.details or {}))
        for a, email in rows.all()
    ]
