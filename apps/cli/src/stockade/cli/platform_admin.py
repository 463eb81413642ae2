"""``stockade admin platform``: grant, revoke and list the platform administrator role (docs/permissions.md).

A platform administrator creates and activates database configurations and changes other platform-wide settings
in the console; the role opens no project's data. Takes effect on the user's next request.
"""

from __future__ import annotations

import typer

from stockade import identity
from stockade.cli.admin import JsonOpt, UserOpt
from stockade.cli.admin_units import emit as _emit
from stockade.cli.admin_units import run as _run

app = typer.Typer(no_args_is_help=True, help="The platform administrator role.")


@app.command("grant")
def grant(ctx: typer.Context, user: UserOpt, as_json: JsonOpt = False) -> None:
    """Make a user a platform administrator."""
    changed = _run(ctx, lambda s: identity.grant_platform_admin(s, user))
    text = f"{user} is a platform administrator" + ("" if changed else " (already)")
    _emit(ctx, as_json, {"user": user, "platform_admin": True, "changed": changed}, text)


@app.command("revoke")
def revoke(ctx: typer.Context, user: UserOpt, as_json: JsonOpt = False) -> None:
    """Take the platform administrator role from a user."""
    changed = _run(ctx, lambda s: identity.revoke_platform_admin(s, user))
    text = f"{user} is not a platform administrator" + ("" if changed else " (was not)")
    _emit(ctx, as_json, {"user": user, "platform_admin": False, "changed": changed}, text)


@app.command("list")
def list_admins(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """List the platform administrators."""
    for admin in _run(ctx, identity.list_platform_admins):
        _emit(ctx, as_json, {"id": admin.id, "email": admin.email}, f"{admin.id}  {admin.email}")
