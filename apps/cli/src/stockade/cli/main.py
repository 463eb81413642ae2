"""The ``stockade`` command."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from stockade.cli.classifier import convert_classifier
from stockade.cli.doctor import print_probes, run_probes
from stockade.cli.policy import app as policy_app
from stockade.cli.stack import StackConfig
from stockade.cli.up import default_state_dir, run_up

app = typer.Typer(
    name="stockade", help="Stockade: ship LLM agents safely.", no_args_is_help=True, add_completion=False
)


@app.command()
def up(
    state_dir: Annotated[
        Path | None, typer.Option(help="Where data, logs and the NATS store live (default ./.stockade).")
    ] = None,
    host: Annotated[
        str, typer.Option(help="Bind address of every part (loopback; any other address prints a warning).")
    ] = "127.0.0.1",
    nats_port: Annotated[int, typer.Option(help="Embedded NATS port.")] = 14222,
    prompt_port: Annotated[int, typer.Option(help="prompt-api port.")] = 8101,
    model_port: Annotated[int, typer.Option(help="model-api (console) port.")] = 8102,
    ingest_port: Annotated[int, typer.Option(help="guardrail-ingest port.")] = 8103,
    toxicity_port: Annotated[int, typer.Option(help="toxicity-classifier port.")] = 8104,
    trust_port: Annotated[int, typer.Option(help="trust-broker's /metrics and /healthz port.")] = 8105,
    startup_timeout: Annotated[float, typer.Option(help="Seconds to wait for each part.")] = 60.0,
    demo: Annotated[
        bool,
        typer.Option(
            "--demo/--no-demo",
            help="On the first start, fill the demo projects with a sample prompt (two versions), a skill, a "
            "proposal to review and a few guardrail runs.",
        ),
    ] = True,
) -> None:
    """Start the embedded stack (NATS + JetStream, SQLite, chdb, all five services) until Ctrl-C."""
    cfg = StackConfig(
        state_dir=(state_dir or default_state_dir()).resolve(),
        host=host,
        nats_port=nats_port,
        prompt_port=prompt_port,
        model_port=model_port,
        ingest_port=ingest_port,
        toxicity_port=toxicity_port,
        trust_port=trust_port,
        startup_timeout_s=startup_timeout,
        demo=demo,
    )
    raise typer.Exit(run_up(cfg))


@app.command()
def doctor(
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
) -> None:
    """Report which real servers can be reached and which versions they run."""
    print_probes(run_probes(), as_json)


@app.command("compose-env")
def compose_env(
    compose_file: Annotated[
        Path, typer.Option(help="The compose file whose ${NAME:?...} secrets to fill.")
    ] = Path("docker-compose.yml"),
    env_file: Annotated[Path | None, typer.Option(help="Default: .env next to the compose file.")] = None,
) -> None:
    """Write random values for the secrets docker-compose.yml requires into .env (existing values are kept)."""
    from stockade.cli.compose_env import main as write

    argv = ["--compose-file", str(compose_file)] + (["--env-file", str(env_file)] if env_file else [])
    raise typer.Exit(write(argv))


@app.command("demo-agent")
def demo_agent(
    state_dir: Annotated[Path | None, typer.Option(help="The state directory of `stockade up`.")] = None,
    host: Annotated[str, typer.Option(help="Where the stack listens.")] = "127.0.0.1",
    nats_port: Annotated[int, typer.Option(help="Embedded NATS port.")] = 14222,
    prompt_port: Annotated[int, typer.Option(help="prompt-api port.")] = 8101,
    ingest_port: Annotated[int, typer.Option(help="guardrail-ingest port.")] = 8103,
    every: Annotated[float, typer.Option(help="Seconds between runs.", min=0.1)] = 5.0,
    runs: Annotated[int, typer.Option(help="Runs to make (0: until Ctrl-C).", min=0)] = 0,
) -> None:
    """A demo support agent on the demo project's guardrail policy `support-bot`, beside `stockade up`: each run
    prints its decision and the policy version that made it; a version published in the console is picked up
    by push, without a restart."""
    import asyncio
    import contextlib

    from stockade.cli.demo_agent import build_agent, run_agent

    path = (state_dir or default_state_dir()).resolve()
    if not (path / "demo.json").exists():
        print(f"error: no demo stack in {path}: start `stockade up` first (or pass --state-dir)")
        raise typer.Exit(2)
    ports = {"nats": nats_port, "prompt": prompt_port, "ingest": ingest_port}
    system = build_agent(path, host, ports)
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C ends the demo
        asyncio.run(run_agent(system, runs, every))


app.command("convert-classifier")(convert_classifier)
app.add_typer(policy_app, name="policy")


def _mount_admin() -> None:
    try:
        from stockade.cli.admin import app as admin_app
        from stockade.cli.platform_admin import app as platform_app
    except ImportError:  # admin commands arrive with stockade.identity
        return
    admin_app.add_typer(platform_app, name="platform")
    app.add_typer(
        admin_app, name="admin", help="Manage organisations, users, projects, API keys and dead letters."
    )


_mount_admin()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
