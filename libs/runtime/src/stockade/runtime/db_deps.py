"""FastAPI dependencies on the database of a ``create_service_app`` app: its session factory and one session per
request (closed when the response is done).

``async def``: FastAPI runs a plain ``def`` dependency in a worker thread, which costs a thread hop per request.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from stockade.runtime.app import service_state


async def get_sessions(request: Request) -> async_sessionmaker[AsyncSession]:
    sessions = service_state(request).sessions
    if sessions is None:
        raise RuntimeError("the database is not configured")
    return sessions


SessionsDep = Annotated[async_sessionmaker[AsyncSession], Depends(get_sessions)]


async def get_session(sessions: SessionsDep) -> AsyncIterator[AsyncSession]:
    async with sessions() as session:
        yield session


SessionDep = Annotated[AsyncSession, Depends(get_session)]
