"""Typed dependencies: settings, database sessions, and the key principal (401/403 before anything else).

All are ``async def``: FastAPI runs a plain ``def`` dependency in a worker thread, which costs a thread hop per
request.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from stockade.identity import KeyPrincipal, authenticate, can_write
from stockade.prompt_api.outbox import OutboxRelay
from stockade.prompt_api.settings import PromptApiSettings

API_KEY_HEADER = "X-API-Key"
API_KEY_QUERY = "api_key"


async def get_settings(request: Request) -> PromptApiSettings:
    settings: PromptApiSettings = request.app.state.settings
    return settings


async def get_sessions(request: Request) -> async_sessionmaker[AsyncSession]:
    sessions: async_sessionmaker[AsyncSession] = request.app.state.sessions
    return sessions


async def get_session(
    sessions: Annotated[async_sessionmaker[AsyncSession], Depends(get_sessions)],
) -> AsyncIterator[AsyncSession]:
    async with sessions() as session:
        yield session


async def get_relay(request: Request) -> OutboxRelay | None:
    relay: OutboxRelay | None = request.app.state.relay
    return relay


SettingsDep = Annotated[PromptApiSettings, Depends(get_settings)]
SessionsDep = Annotated[async_sessionmaker[AsyncSession], Depends(get_sessions)]
SessionDep = Annotated[AsyncSession, Depends(get_session)]
RelayDep = Annotated[OutboxRelay | None, Depends(get_relay)]


def _unauthorised(message: str) -> HTTPException:
    return HTTPException(status_code=401, detail=message)


async def reader(request: Request, session: SessionDep, settings: SettingsDep) -> KeyPrincipal:
    """Read endpoints other than the uniform read: X-API-Key header (preferred) or api_key query."""
    key = request.headers.get(API_KEY_HEADER) or request.query_params.get(API_KEY_QUERY)
    if not key:
        raise _unauthorised("an API key is required (X-API-Key header or api_key query parameter)")
    principal = await authenticate(session, key, settings.deployment)
    await session.commit()  # end the read transaction: the route's queries see the newest rows
    if principal is None:
        raise _unauthorised("invalid or revoked API key")
    return principal


async def writer(request: Request, session: SessionDep, settings: SettingsDep) -> KeyPrincipal:
    """Publish endpoints: the X-API-Key header only (a key in the query string ends up in logs)."""
    key = request.headers.get(API_KEY_HEADER)
    if not key:
        hint = (
            " (a key in the query string is not accepted here)"
            if API_KEY_QUERY in request.query_params
            else ""
        )
        raise _unauthorised(f"the X-API-Key header is required{hint}")
    principal = await authenticate(session, key, settings.deployment)
    await session.commit()
    if principal is None:
        raise _unauthorised("invalid or revoked API key")
    decision = can_write(principal)
    if not decision.allowed:
        raise HTTPException(status_code=403, detail=decision.reason)
    return principal


ReaderDep = Annotated[KeyPrincipal, Depends(reader)]
WriterDep = Annotated[KeyPrincipal, Depends(writer)]
