"""``stockade admin user set-password`` and ``stockade admin user sign-out``: a user's password and console
sessions (review finding L6). Added to ``stockade admin user`` by :mod:`stockade.cli.admin`."""

import sys
from typing import Any

import typer
from sqlalchemy.ext.asyncio import AsyncSession


def add_session_commands(user_app: typer.Typer, run: Any, emit: Any, json_opt: Any) -> None:
    """Add the two commands to ``user_app``; :mod:`stockade.cli.admin` passes its helpers (``_run``, ``_emit``)
    and its ``--json`` option type."""
    from stockade.identity.directory import find_user
    from stockade.identity.sessions import end_user_sessions, set_password

    @user_app.command("set-password")
    def user_set_password(ctx: typer.Context, user: str, as_json: json_opt = False) -> None:
        """Set a user's password (read from stdin, at least 8 characters) and sign them out everywhere."""
        password = sys.stdin.readline().rstrip("\r\n")
        ended = run(ctx, lambda s: set_password(s, user, password))
        text = f"password set; {ended} session(s) ended"
        emit(ctx, as_json, {"user": user, "sessions_ended": ended}, text)

    @user_app.command("sign-out")
    def user_sign_out(ctx: typer.Context, user: str, as_json: json_opt = False) -> None:
        """End every console session of a user (and their prompt-api credentials) now."""

        async def go(s: AsyncSession) -> int:
            return await end_user_sessions(s, (await find_user(s, user)).id)

        ended = run(ctx, go)
        emit(ctx, as_json, {"user": user, "sessions_ended": ended}, f"{ended} session(s) ended")
