"""``stockade policy publish | diff | rollback``: guardrail policies kept in git, published to prompt-api (issue 31).

Every command talks to prompt-api through :mod:`stockade.client` with the key in ``STOCKADE_API_KEY`` (never a
flag: a key on the command line lands in the shell's history). Progress goes to stderr, results to stdout.

Exit codes, for scripts and CI:

- ``0``: done (``publish``: published, or the file is already the active version; ``diff``: no difference);
- ``1``: ``diff`` only: the file differs from the published version;
- ``2``: a local problem (the file cannot be read, no key, a bad option);
- ``3``: prompt-api refused (an invalid policy, with its key path; a secret in the policy; no access; no such
  policy or version);
- ``4``: prompt-api could not be reached or failed.
"""

from __future__ import annotations

import difflib
import hashlib
import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from stockade.client import StockadeClient
from stockade.client.errors import NotFoundError, ServerUnavailableError, StockadeClientError
from stockade.client.models import PolicyVersion
from stockade.client.settings import CacheSettings, ClientSettings

EXIT_DIFFERS, EXIT_LOCAL, EXIT_REFUSED, EXIT_UNAVAILABLE = 1, 2, 3, 4

app = typer.Typer(
    help="Guardrail policies on the platform: publish a YAML file kept in git, diff it, roll back.",
    no_args_is_help=True,
    add_completion=False,
)

Project = Annotated[str, typer.Option("--project", help="The project's id.", show_default=False)]
Name = Annotated[str, typer.Option("--name", help="The policy's name in the project.", show_default=False)]
Url = Annotated[
    str,
    typer.Option("--prompt-api", envvar="STOCKADE_PROMPT_API_URL", help="prompt-api's base URL."),
]
Key = Annotated[
    str,
    typer.Option(
        "--api-key-env",
        help="The environment variable holding your API key (write scope to publish or roll back).",
    ),
]
Message = Annotated[str | None, typer.Option("--message", "-m", help="The version's commit message.")]


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _stop(code: int, message: str) -> NoReturn:
    print(f"error: {message}", file=sys.stderr, flush=True)
    raise typer.Exit(code)


def _client(url: str, key_env: str) -> StockadeClient:
    import os

    key = os.environ.get(key_env, "")
    if not key:
        _stop(EXIT_LOCAL, f"no API key: set {key_env} (a key of yours from the console's API keys page)")
    # no cache: a command run from git always compares with what prompt-api holds now
    settings = ClientSettings(base_url=url, cache=CacheSettings(enabled=False))
    return StockadeClient(key, settings)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        _stop(EXIT_LOCAL, f"{path}: no such file")
    except UnicodeDecodeError as exc:
        _stop(EXIT_LOCAL, f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})")
    except OSError as exc:
        _stop(EXIT_LOCAL, f"{path}: cannot be read: {exc.strerror or exc}")


def _refused(exc: StockadeClientError, what: str) -> NoReturn:
    if isinstance(exc, ServerUnavailableError):
        _stop(EXIT_UNAVAILABLE, f"prompt-api is unavailable: {exc.message}")
    hint = ""
    if exc.status_code == 401:
        hint = " (the key is unknown, revoked or expired)"
    elif exc.status_code == 403:
        hint = (
            " (a read-scope key, no membership of the project, or a Manual review project where publishing "
            "needs the approver tag: send it for review with --propose)"
        )
    _stop(EXIT_REFUSED, f"{what}: {exc.message}{hint}")


def _active(client: StockadeClient, project: str, name: str) -> PolicyVersion | None:
    """The active version, or None when prompt-api gives its uniform 404 (no such policy yet, or no access: a
    publish says which)."""
    try:
        return client.get_policy(project, name)
    except NotFoundError:
        return None
    except StockadeClientError as exc:
        _refused(exc, f"reading policy {name!r}")


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@app.command()
def publish(
    file: Annotated[Path, typer.Argument(help="The policy's YAML file.", show_default=False)],
    project: Project,
    name: Name,
    message: Message = None,
    propose: Annotated[
        bool,
        typer.Option("--propose", help="Manual review project: propose FILE for an approver to publish."),
    ] = False,
    prompt_api: Url = "http://127.0.0.1:8101",
    api_key_env: Key = "STOCKADE_API_KEY",
) -> None:
    """Publish FILE as the policy's new active version (nothing is published when it is the active one), or with
    --propose, send it to the project's policy review queue."""
    text = _read(file)
    with _client(prompt_api, api_key_env) as client:
        _say(f"reading the active version of policy {name!r} in project {project!r} ...")
        active = _active(client, project, name)
        if active is not None and active.sha256 == _sha256(text):
            print(f"unchanged: version {active.version} of {name} is active with this content")
            return
        _say(f"{'proposing' if propose else 'publishing'} {file} ({len(text.encode())} bytes) ...")
        try:
            if propose:
                proposal = client.propose_policy(project, name, text, message)
            else:
                published = client.publish_policy(project, name, text, message)
        except StockadeClientError as exc:
            _refused(exc, f"{file} was not {'proposed' if propose else 'published'}")
    if propose:
        print(f"proposed: {proposal.id} waits for an approver in the policy review queue of {project}")
        return
    before = f" (was version {active.version})" if active is not None else " (its first version)"
    print(f"published: {name} version {published.version} is active{before}, sha256 {published.sha256[:12]}")


@app.command()
def diff(
    file: Annotated[Path, typer.Argument(help="The policy's YAML file.", show_default=False)],
    project: Project,
    name: Name,
    version: Annotated[
        int | None, typer.Option(help="Compare with this version instead of the active one.", min=1)
    ] = None,
    prompt_api: Url = "http://127.0.0.1:8101",
    api_key_env: Key = "STOCKADE_API_KEY",
) -> None:
    """Show what publishing FILE would change: a unified diff against the active (or given) version. Exits 0
    when they are the same, 1 when they differ."""
    text = _read(file)
    with _client(prompt_api, api_key_env) as client:
        try:
            published = (
                client.get_policy(project, name, version) if version else _active(client, project, name)
            )
        except StockadeClientError as exc:
            _refused(exc, f"reading version {version} of policy {name!r}")
    if published is None:
        _stop(
            EXIT_REFUSED,
            f"policy {name!r} has no active version in project {project!r} that this key can read "
            "(not published yet, or no access)",
        )
    label = f"{project}/{name} version {published.version}" + ("" if version else " (active)")
    lines = list(
        difflib.unified_diff(
            published.yaml.splitlines(keepends=True), text.splitlines(keepends=True), label, str(file)
        )
    )
    if not lines:
        _say(f"no difference: {file} is {label}")
        return
    color = sys.stdout.isatty()
    for line in lines:
        line = line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
        if color and line[:1] in "+-" and not line.startswith(("+++", "---")):
            line = f"\033[{'32' if line[0] == '+' else '31'}m{line.rstrip(chr(10))}\033[0m\n"
        sys.stdout.write(line)
    raise typer.Exit(EXIT_DIFFERS)


@app.command()
def rollback(
    project: Project,
    name: Name,
    version: Annotated[int, typer.Option(help="The version whose YAML becomes active again.", min=1)],
    message: Message = None,
    prompt_api: Url = "http://127.0.0.1:8101",
    api_key_env: Key = "STOCKADE_API_KEY",
) -> None:
    """Make an earlier version's YAML active again, as a new version (the history keeps everything)."""
    with _client(prompt_api, api_key_env) as client:
        _say(f"rolling policy {name!r} in project {project!r} back to version {version} ...")
        try:
            published = client.rollback_policy(project, name, version, message)
        except StockadeClientError as exc:
            _refused(exc, f"policy {name!r} was not rolled back")
    print(f"rolled back: {name} version {published.version} is active, the content of version {version}")
