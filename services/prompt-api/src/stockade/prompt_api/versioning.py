"""The next version number of a prompt or skill, allocated under a row lock.

``INSERT ... ON CONFLICT DO NOTHING`` creates the row on the first publish; ``UPDATE ... SET latest_version =
latest_version + 1 ... RETURNING`` locks it until the transaction ends, so concurrent publishes queue up and
each gets the next number: never a duplicate, never a gap (a rolled-back publish rolls its number back too).
"""

from __future__ import annotations

from sqlalchemy import update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from stockade.identity.db_types import new_id, utcnow
from stockade.prompt_api.tables import Prompt, Skill


async def next_version(
    session: AsyncSession, table: type[Prompt] | type[Skill], project_id: str, name: str
) -> tuple[str, int]:
    """Returns (row id, new version number); the caller's transaction holds the row lock until commit."""
    dialect = session.get_bind().dialect.name
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    await session.execute(
        insert(table)
        .values(id=new_id(), project_id=project_id, name=name, latest_version=0, created_at=utcnow())
        .on_conflict_do_nothing(index_elements=["project_id", "name"])
    )
    row = (
        await session.execute(
            update(table)
            .where(table.project_id == project_id, table.name == name)
            .values(latest_version=table.latest_version + 1)
            .returning(table.id, table.latest_version)
        )
    ).one()
    return str(row[0]), int(row[1])


async def activate(
    session: AsyncSession, table: type[Prompt] | type[Skill], row_id: str, version: int
) -> None:
    await session.execute(update(table).where(table.id == row_id).values(active_version=version))
