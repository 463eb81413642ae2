"""``stockade admin dead-letters``: guardrail events a store refused, in guardrail-ingest's dead-letter stream.

``list`` shows them (oldest first, with the store's reason); ``replay SEQUENCE...`` (or ``--all``) queues them again
for the sink workers and deletes them from the dead-letter stream. Replay after fixing what the reason names (a
ClickHouse table changed by hand, the event itself re-sent smaller): an event the store still refuses comes back
to the dead-letter stream after the same number of deliveries.

NATS: ``--nats-url`` (default ``NATS_URL``, else ``stockade up``'s ``nats://127.0.0.1:14222``); on a deployment
with NATS users, the ``guardrail-ingest`` user and its password (``--nats-user``, ``STOCKADE_NATS_PASSWORD``).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

import typer
from nats.aio.client import Client
from nats.js.errors import NotFoundError

from stockade.guardrail_ingest.dead_letters import DeadLetter, list_dead_letters, replay
from stockade.guardrail_ingest.settings import StreamSettings

T = TypeVar("T")

app = typer.Typer(no_args_is_help=True, help="Guardrail events the store refused (dead letters).")

UrlOpt = Annotated[
    str | None, typer.Option("--nats-url", help="NATS URL (default NATS_URL or stockade up's).")
]
UserOpt = Annotated[str | None, typer.Option("--nats-user", help="NATS user, e.g. guardrail-ingest.")]
PasswordOpt = Annotated[
    str | None,
    typer.Option("--nats-password", envvar="STOCKADE_NATS_PASSWORD", help="Password of --nats-user."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="One JSON object per line.")]
CONNECT_TIMEOUT_S = 5.0


def _url(url: str | None) -> str:
    return url or os.environ.get("NATS_URL") or "nats://127.0.0.1:14222"


def _with_nats(
    url: str | None, user: str | None, password: str | None, action: Callable[[Client], Awaitable[T]]
) -> T:
    """Connect (bounded: no reconnect loop when nothing listens), run ``action``, close; failures exit 1."""
    from stockade.runtime.nats import probe_connect

    async def go() -> T:
        options: dict[str, Any] = {"user": user, "password": password} if user else {}
        nc = await probe_connect(_url(url), timeout_s=CONNECT_TIMEOUT_S, **options)
        try:
            return await action(nc)
        finally:
            await nc.close()

    try:
        return asyncio.run(go())
    except NotFoundError:
        typer.echo("error: no dead-letter stream (guardrail-ingest creates it when it starts)", err=True)
    except Exception as exc:
        typer.echo(f"error: {type(exc).__name__}: {exc}", err=True)
    raise typer.Exit(1)


def _summary(letter: DeadLetter) -> dict[str, Any]:
    message, record = letter.message, letter.message.record
    return {
        "sequence": letter.sequence,
        "event_id": record.get("event_id"),
        "run_id": record.get("run_id"),
        "db_type": message.db_type,
        "attempts": message.attempts,
        "reason": message.reason,
        "dead_lettered_at": message.occurred_at.isoformat(),
        "batch_id": message.batch_id,
        "record": record,
    }


def _json(ctx: typer.Context, flag: bool) -> bool:
    return flag or bool(ctx.obj and ctx.obj.get("json"))


@app.command("list")
def list_command(
    ctx: typer.Context,
    nats_url: UrlOpt = None,
    nats_user: UserOpt = None,
    nats_password: PasswordOpt = None,
    limit: Annotated[int, typer.Option(min=1, help="Show at most this many (oldest first).")] = 100,
    as_json: JsonOpt = False,
) -> None:
    """Show dead letters: sequence, event, run, attempts and the store's reason (--json adds the record)."""
    settings = StreamSettings()
    letters = _with_nats(
        nats_url, nats_user, nats_password, lambda nc: list_dead_letters(nc.jetstream(), settings, limit)
    )
    for letter in letters:
        row = _summary(letter)
        if _json(ctx, as_json):
            typer.echo(json.dumps(row, default=str))
        else:
            typer.echo(
                f"{row['sequence']}  {row['dead_lettered_at']}  event {row['event_id']}  run {row['run_id']}  "
                f"{row['db_type']}  {row['attempts']} attempts  {row['reason']}"
            )
    if not letters and not _json(ctx, as_json):
        typer.echo("no dead letters")


@app.command("replay")
def replay_command(
    ctx: typer.Context,
    sequences: Annotated[list[int] | None, typer.Argument(help="Sequences shown by list.")] = None,
    replay_all: Annotated[bool, typer.Option("--all", help="Every dead letter.")] = False,
    nats_url: UrlOpt = None,
    nats_user: UserOpt = None,
    nats_password: PasswordOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Queue dead letters again for the sink workers and delete them from the dead-letter stream."""
    if bool(sequences) == replay_all:
        typer.echo("error: give the sequences to replay, or --all", err=True)
        raise typer.Exit(2)
    settings = StreamSettings()

    async def go(nc: Client) -> tuple[int, list[int]]:
        js = nc.jetstream()
        wanted = list(sequences or [])
        if replay_all:
            info = await js.stream_info(settings.dead_letter_stream)
            wanted = list(range(info.state.first_seq, info.state.last_seq + 1)) if info.state.messages else []
        queued, missing = await replay(js, settings, wanted, max_payload=nc.max_payload)
        return queued, [] if replay_all else missing

    queued, missing = _with_nats(nats_url, nats_user, nats_password, go)
    if _json(ctx, as_json):
        typer.echo(json.dumps({"replayed": queued, "not_found": missing}))
    else:
        typer.echo(f"replayed {queued} event(s)" + (f"; not found: {missing}" if missing else ""))
    if missing:
        raise typer.Exit(1)
