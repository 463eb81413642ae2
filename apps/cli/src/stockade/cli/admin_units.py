"""How ``stockade admin`` runs a command against the database: migrate, one unit of work, domain errors as exit
code 1 with a message (``--json``: an error object)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import typer
from sqlalchemy.ext.asyncio import AsyncSession

from stockade import identity
from stockade.identity.migrate import upgrade
from stockade.model_api.migrate import upgrade as upgrade_with_outbox
from stockade.runtime.db import create_engine, session_factory
from stockade.runtime.uow import UnitOfWork

T = TypeVar("T")


def run(ctx: typer.Context, action: Callable[[AsyncSession], Awaitable[T]], *, events: bool = False) -> T:
    """Migrate (idempotent), then run ``action`` in one unit of work (``stockade.runtime.uow``): committed when
    it returns, nothing when it fails; domain errors exit 1 with a message. ``events``: the action records events
    in model-api's outbox (model-api's relay publishes them), so model-api's tables are migrated too."""
    url: str = ctx.obj["db_url"]
    (upgrade_with_outbox if events else upgrade)(url)

    async def go() -> T:
        engine = create_engine(url)
        try:
            async with UnitOfWork(session_factory(engine)) as uow:
                return await action(uow.session)
        finally:
            await engine.dispose()

    return errors_exit(ctx, go)


def run_own(ctx: typer.Context, action: Callable[[AsyncSession], Awaitable[T]]) -> T:
    """:func:`run` for the console-session functions of ``stockade.identity.sessions``, which still commit
    themselves (a sign-in's protocol): the action gets a plain session."""
    url: str = ctx.obj["db_url"]
    upgrade(url)

    async def go() -> T:
        engine = create_engine(url)
        try:
            async with session_factory(engine)() as session:
                return await action(session)
        finally:
            await engine.dispose()

    return errors_exit(ctx, go)


def errors_exit(ctx: typer.Context, go: Callable[[], Coroutine[Any, Any, T]]) -> T:
    try:
        return asyncio.run(go())
    except identity.IdentityError as exc:
        code = {
            identity.NotFoundError: "not_found",
            identity.ConflictError: "conflict",
            identity.InvalidInputError: "invalid",
        }.get(type(exc), "error")
        if wants_json(ctx, False):
            typer.echo(json.dumps({"error": {"code": code, "message": str(exc)}}))
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None


def wants_json(ctx: typer.Context, flag: bool) -> bool:
    return flag or bool(ctx.obj and ctx.obj.get("json"))


def emit(ctx: typer.Context, flag: bool, obj: dict[str, Any], text: str) -> None:
    typer.echo(json.dumps(obj, default=str) if wants_json(ctx, flag) else text)
