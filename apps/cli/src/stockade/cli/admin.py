"""``stockade admin``: organisations, users, projects, memberships, approver tags, API keys and dead letters.

Acts on the database of ``stockade up`` run in the same directory (``./.stockade/stockade.db``) unless
``--db-url`` (or ``STOCKADE_DB_URL``) names another. ``--json`` prints one JSON object per line; created things
print ``{"id": ...}`` (keys: ``{"id", "key", "scope"}``, the plaintext shown this once). ORG, USER and PROJECT
accept an id or the unique name / e-mail.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, TypeVar

import typer

from stockade import identity
from stockade.cli import revocation
from stockade.cli.admin_sessions import add_session_commands
from stockade.cli.admin_units import emit as _emit
from stockade.cli.admin_units import run as _run
from stockade.cli.admin_units import run_own as _run_own
from stockade.cli.dead_letters import app as dead_letters_app

T = TypeVar("T")

app = typer.Typer(
    no_args_is_help=True, add_completion=False, help=__doc__.split("\n")[0] if __doc__ else None
)
org_app = typer.Typer(no_args_is_help=True, help="Organisations.")
user_app = typer.Typer(no_args_is_help=True, help="Users.")
project_app = typer.Typer(no_args_is_help=True, help="Projects.")
member_app = typer.Typer(no_args_is_help=True, help="Project membership.")
tag_app = typer.Typer(no_args_is_help=True, help="Tags on a project (approver).")
key_app = typer.Typer(no_args_is_help=True, help="API keys.")
for _sub, _name in (
    (dead_letters_app, "dead-letters"),
    (org_app, "org"),
    (user_app, "user"),
    (project_app, "project"),
    (member_app, "member"),
    (tag_app, "tag"),
    (key_app, "key"),
):
    app.add_typer(_sub, name=_name)

JsonOpt = Annotated[bool, typer.Option("--json", help="One JSON object per line.")]
OrgOpt = Annotated[str, typer.Option("--org", help="Organisation id or name.")]
UserOpt = Annotated[str, typer.Option("--user", help="User id or e-mail.")]
ProjectOpt = Annotated[str, typer.Option("--project", help="Project id or name.")]


def default_db_url() -> str:
    return (
        os.environ.get("STOCKADE_DB_URL") or f"sqlite+aiosqlite:///{Path.cwd() / '.stockade' / 'stockade.db'}"
    )


@app.callback()
def _options(
    ctx: typer.Context,
    db_url: Annotated[
        str | None, typer.Option("--db-url", help="Database URL (default: ./.stockade/stockade.db).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    ctx.obj = {"db_url": db_url or default_db_url(), "json": as_json}


# --- organisations ----------------------------------------------------------------------------------------
@org_app.command("create")
def org_create(ctx: typer.Context, name: str, as_json: JsonOpt = False) -> None:
    """Create an organisation."""
    org = _run(ctx, lambda s: identity.create_organisation(s, name))
    _emit(ctx, as_json, {"id": org.id, "name": org.name}, f"organisation {org.name} created: {org.id}")


@org_app.command("add-member")
def org_add_member(ctx: typer.Context, org: OrgOpt, user: UserOpt, as_json: JsonOpt = False) -> None:
    """Add a user to an organisation (lets their keys read prompts of its projects)."""
    _run(ctx, lambda s: identity.add_organisation_member(s, org, user))
    _emit(ctx, as_json, {"organisation": org, "user": user, "member": True}, f"{user} added to {org}")


@org_app.command("remove-member")
def org_remove_member(ctx: typer.Context, org: OrgOpt, user: UserOpt, as_json: JsonOpt = False) -> None:
    """Remove a user from an organisation (their keys stop reaching its projects on the next request)."""
    removed = _run(ctx, lambda s: identity.remove_organisation_member(s, org, user))
    _emit(ctx, as_json, {"organisation": org, "user": user, "removed": removed}, f"removed: {removed}")


# --- users ------------------------------------------------------------------------------------------------
@user_app.command("create")
def user_create(
    ctx: typer.Context,
    email: str,
    password_stdin: Annotated[
        bool, typer.Option("--password-stdin", help="Read a password from stdin.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Create a user."""
    password = sys.stdin.readline().rstrip("\r\n") if password_stdin else None
    if password_stdin and not password:
        typer.echo("error: empty password on stdin", err=True)
        raise typer.Exit(2)
    user = _run(ctx, lambda s: identity.create_user(s, email, password))
    _emit(ctx, as_json, {"id": user.id, "email": user.email}, f"user {user.email} created: {user.id}")


# --- projects ---------------------------------------------------------------------------------------------
FlowOpt = Annotated[str, typer.Option("--flow", help="direct or manual-review.")]


@project_app.command("create")
def project_create(
    ctx: typer.Context, name: str, org: OrgOpt, flow: FlowOpt = "direct", as_json: JsonOpt = False
) -> None:
    """Create a project in an organisation."""
    project = _run(ctx, lambda s: identity.create_project(s, org, name, flow))
    _emit(
        ctx,
        as_json,
        {
            "id": project.id,
            "name": project.name,
            "organisation_id": project.organisation_id,
            "flow": project.flow,
        },
        f"project {project.name} ({project.flow}) created: {project.id}",
    )


@project_app.command("set-flow")
def project_set_flow(ctx: typer.Context, project: str, flow: str, as_json: JsonOpt = False) -> None:
    """Set a project's publishing flow (direct or manual-review)."""
    updated = _run(ctx, lambda s: identity.set_project_flow(s, project, flow))
    _emit(
        ctx, as_json, {"id": updated.id, "flow": updated.flow}, f"project {updated.name}: flow {updated.flow}"
    )


# --- membership -------------------------------------------------------------------------------------------
@member_app.command("add")
def member_add(ctx: typer.Context, project: ProjectOpt, user: UserOpt, as_json: JsonOpt = False) -> None:
    """Add a user to a project (and to its organisation)."""
    _run(ctx, lambda s: identity.add_project_member(s, project, user))
    _emit(ctx, as_json, {"project": project, "user": user, "member": True}, f"{user} added to {project}")


@member_app.command("remove")
def member_remove(ctx: typer.Context, project: ProjectOpt, user: UserOpt, as_json: JsonOpt = False) -> None:
    """Remove a user from a project; effective on the next request."""
    removed = _run(ctx, lambda s: identity.remove_project_member(s, project, user))
    _emit(ctx, as_json, {"project": project, "user": user, "removed": removed}, f"removed: {removed}")


# --- tags -------------------------------------------------------------------------------------------------
@tag_app.command("grant")
def tag_grant(
    ctx: typer.Context, tag: str, project: ProjectOpt, user: UserOpt, as_json: JsonOpt = False
) -> None:
    """Grant a tag (approver) on a project."""
    _run(ctx, lambda s: identity.grant_tag(s, project, user, tag))
    _emit(ctx, as_json, {"project": project, "user": user, "tag": tag, "granted": True}, f"{tag} granted")


@tag_app.command("revoke")
def tag_revoke(
    ctx: typer.Context, tag: str, project: ProjectOpt, user: UserOpt, as_json: JsonOpt = False
) -> None:
    """Revoke a tag (approver) on a project; effective on the next request."""
    removed = _run(ctx, lambda s: identity.revoke_tag(s, project, user, tag))
    _emit(
        ctx,
        as_json,
        {"project": project, "user": user, "tag": tag, "revoked": removed},
        f"revoked: {removed}",
    )


# --- API keys ---------------------------------------------------------------------------------------------
@key_app.command("create")
def key_create(
    ctx: typer.Context,
    user: UserOpt,
    scope: Annotated[
        str, typer.Option("--scope", help="read or write (on-prem), or ingest (needs --project).")
    ] = "read",
    legacy: Annotated[bool, typer.Option("--legacy", help="A key as before scopes existed (reads).")] = False,
    project: Annotated[
        str | None,
        typer.Option("--project", help="Ingest keys: the project (id or name) whose run events it sends."),
    ] = None,
    deployment: Annotated[
        str | None,
        typer.Option("--deployment", help="onprem or hosted (default: STOCKADE_DEPLOYMENT, else onprem)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Create an API key (or, with --scope ingest --project P, a per-project ingest key for guardrail-ingest).
    The plaintext is printed once; only its SHA-256 is stored."""
    mode = deployment or os.environ.get("STOCKADE_DEPLOYMENT") or "onprem"
    key = _run(
        ctx,
        lambda s: identity.create_api_key(
            s, user, scope=scope, deployment=mode, legacy=legacy, project=project
        ),
    )
    _emit(
        ctx,
        as_json,
        {
            "id": key.id,
            "key": key.key,
            "scope": key.scope,
            "deployment": key.deployment,
            "project_id": key.project_id,
        },
        f"key {key.id} (scope {key.scope or 'none: reads only'}, {key.deployment}):\n{key.key}\n"
        "Store it now: it cannot be shown again.",
    )


@key_app.command("list")
def key_list(ctx: typer.Context, user: UserOpt, as_json: JsonOpt = False) -> None:
    """List a user's keys (never the plaintext)."""
    keys = _run(ctx, lambda s: identity.list_api_keys(s, user))
    for key in keys:
        state = "revoked" if key.revoked_at else "active"
        _emit(
            ctx,
            as_json,
            key.model_dump(mode="json") | {"state": state},
            f"{key.id}  {key.display}  scope={key.scope or '-'}  {key.deployment}  {state}",
        )


@key_app.command("revoke")
def key_revoke(ctx: typer.Context, key_id: str, as_json: JsonOpt = False) -> None:
    """Revoke a key by id; it fails on every endpoint from the next request on. Its apikey.revoked.v1 is
    recorded in the same transaction (model-api's outbox); model-api's relay publishes it, and guardrail-ingest
    drops the key from its cache when it arrives."""
    key, announced = _run(ctx, lambda s: revocation.revoke(s, key_id), events=True)
    _emit(
        ctx,
        as_json,
        {"id": key.id, "revoked_at": key.revoked_at, "announced": announced},
        f"key {key.id} revoked",
    )


add_session_commands(user_app, _run_own, _emit, JsonOpt)  # user set-password, sign-out (admin_sessions.py)
