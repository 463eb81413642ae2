"""Typed dependencies: settings, database sessions, the outbox relay, and the key principal (401/403 before
anything else). They read the app's ``create_service_app`` state: the shared ``ServiceState`` and prompt-api's own
:class:`PromptApiState`.

All are ``async def``: FastAPI runs a plain ``def`` dependency in a worker thread, which costs a thread hop per
request.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from stockade.identity import KeyPrincipal, authenticate, can_write
from stockade.prompt_api.body import M, parse_body
from stockade.prompt_api.read_path import ActivePromptReader
from stockade.prompt_api.settings import PromptApiSettings
from stockade.runtime.app import service_of, service_state
from stockade.runtime.db_deps import SessionDep as SessionDep
from stockade.runtime.db_deps import SessionsDep as SessionsDep
from stockade.runtime.outbox import OutboxRelay

API_KEY_HEADER = "X-API-Key"
API_KEY_QUERY = "api_key"


@dataclass
class PromptApiState:
    """What the startup hook builds (``create_service_app``'s typed state) and the shutdown hook closes."""

    reader: ActivePromptReader  # the hot read path (read_path.py)
    relay: OutboxRelay  # started only when ``outbox.enabled``


async def get_settings(request: Request) -> PromptApiSettings:
    settings = service_state(request).settings
    if not isinstance(settings, PromptApiSettings):
        raise RuntimeError("this app was not made by prompt-api's create_app")
    return settings


async def get_relay(request: Request) -> OutboxRelay | None:
    return service_of(request, PromptApiState).relay


SettingsDep = Annotated[PromptApiSettings, Depends(get_settings)]
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


@dataclass(frozen=True, slots=True)
class Writing:
    """What every write route takes: the writer (:func:`writer`), sessions, settings and the outbox relay (a
    write's unit of work wakes it after the commit: ``versioning.writing``)."""

    principal: KeyPrincipal
    sessions: async_sessionmaker[AsyncSession]
    settings: PromptApiSettings
    relay: OutboxRelay | None

    async def body(self, request: Request, model: type[M]) -> M:
        """The request's body as ``model``, under ``limits.max_body_bytes`` (413, then 422)."""
        return await parse_body(request, model, self.settings.limits.max_body_bytes)


async def writing(
    principal: WriterDep, sessions: SessionsDep, settings: SettingsDep, relay: RelayDep
) -> Writing:
    return Writing(principal, sessions, settings, relay)


WritingDep = Annotated[Writing, Depends(writing)]
