"""Replays the builder stage of deploy/Dockerfile (``--build-arg SERVICE=<service>``) without Docker.

No Docker engine runs here, so the test does what the builder stage does, with the same files and the same
uv commands read from the Dockerfile: it copies exactly what the COPY instructions name into an empty
directory, runs the dependencies-only ``uv sync`` (it must work from the manifests alone), then copies the
sources and runs the install ``uv sync`` into a fresh virtual environment. The resulting environment must
import the service and run its health probe's module; prompt-api's must also migrate a real PostgreSQL
database, as the compose ``migrate`` job does. Each target's own build step (it imports its service) must pass
on its service's environment and fail on another's, as a wrong SERVICE build argument would make it.

The copies skip what .dockerignore keeps out of the build context (tests, caches, virtual environments).
"""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import inspect
from sqlalchemy.ext.asyncio import create_async_engine

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
SERVICES = sorted(p.name for p in (ROOT / "services").iterdir() if (p / "pyproject.toml").is_file())
IGNORED = shutil.ignore_patterns("tests", "__pycache__", "*.py[cod]", ".venv", "*.egg-info", ".*_cache")

pytestmark = pytest.mark.slow


def stages(service: str) -> dict[str, list[tuple[str, str]]]:
    """(keyword, arguments) of each stage of deploy/Dockerfile by name, continuation lines joined, as
    ``--build-arg SERVICE=<service>`` makes them: ``${SERVICE}`` expanded where the stage declares it."""
    out: dict[str, list[tuple[str, str]]] = {}
    stage: list[tuple[str, str]] = []  # the global ARGs before the first FROM
    pending = ""
    for raw in DOCKERFILE.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        keyword, _, args = (pending + line).partition(" ")
        pending = ""
        if keyword.upper() == "FROM":
            stage = out.setdefault(args.split()[-1], [])
        if ("ARG", "SERVICE") in stage:
            args = args.replace("${SERVICE}", service)
        stage.append((keyword.upper(), args.strip()))
    return out


def uv_binary() -> str:
    beside = Path(sys.executable).parent / "uv"
    found = str(beside) if beside.exists() else shutil.which("uv")
    assert found, "uv is part of the development install (python3 dev.py install)"
    return found


def copy_into(build: Path, args: str) -> None:
    *sources, dest = [w for w in args.split() if not w.startswith("--")]
    for source in sources:
        src = ROOT / source
        target = build / dest / src.name if dest.endswith("/") and src.is_file() else build / dest
        if src.is_dir():
            shutil.copytree(src, target, ignore=IGNORED, dirs_exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)


def uv_sync(build: Path, run_args: str, venv: Path) -> subprocess.CompletedProcess[str]:
    command = shlex.split(run_args[run_args.index("uv sync") :])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("UV_", "VIRTUAL_ENV"))}
    env.update(UV_PROJECT_ENVIRONMENT=str(venv), UV_PYTHON_DOWNLOADS="never", UV_LINK_MODE="hardlink")
    return subprocess.run(
        [uv_binary(), *command[1:], "--python", sys.executable],
        cwd=build,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def build_environment(service: str, build: Path, venv: Path, *, dependencies_only: bool = False) -> Path:
    build.mkdir(parents=True)
    sources_copied = False
    for keyword, args in stages(service)["builder"]:
        if keyword == "COPY" and "--from" not in args:
            if dependencies_only and not args.split()[0].endswith(("pyproject.toml", "uv.lock")):
                return venv
            copy_into(build, args)
            sources_copied = sources_copied or not args.split()[0].endswith(("pyproject.toml", "uv.lock"))
        elif keyword == "RUN" and "uv sync" in args:
            if "--no-install-workspace" in args:
                assert not sources_copied
                assert not list(build.rglob("*.py")), "the dependencies-only layer must see no source"
            result = uv_sync(build, args, venv)
            assert result.returncode == 0, result.stderr[-3000:]
    assert sources_copied
    return venv


# Full replays are slow on two shared cores (wheel builds of the workspace members): done for the two
# Dockerfile shapes (HTTP service, NATS-only service) and shared by the tests below.
FULLY_BUILT = ("prompt-api", "trust-broker")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    cache: dict[str, Path] = {}

    class Lazy(dict[str, Path]):
        def __missing__(self, service: str) -> Path:
            base = tmp_path_factory.mktemp(service)
            cache[service] = build_environment(service, base / "src", base / "venv")
            return cache[service]

    return Lazy()


def run_in(venv: Path, command: list[str]) -> subprocess.CompletedProcess[str]:
    # Outside the repository, so nothing resolves to the working tree: only what was installed. The
    # environment's bin comes first on PATH, as in the image.
    return subprocess.run(
        command,
        cwd=venv,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": f"{venv / 'bin'}:{os.environ.get('PATH', '')}", "HOME": str(venv)},
    )


def run_python(venv: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_in(venv, [str(venv / "bin" / "python"), *args])


@pytest.mark.parametrize("service", SERVICES)
def test_dependencies_only_layer_installs_from_the_manifests_alone(service: str, tmp_path: Path) -> None:
    venv = build_environment(service, tmp_path / "src", tmp_path / "venv", dependencies_only=True)
    assert (venv / "bin" / "python").exists()
    names = {p.name.split("-")[0].lower() for p in venv.glob("lib/python*/site-packages/*.dist-info")}
    assert "pydantic" in names and "nats_py" in names
    assert not any(name.startswith("stockade") for name in names), (
        "workspace members belong to the next layer"
    )


@pytest.mark.parametrize("service", FULLY_BUILT)
def test_builder_stage_installs_a_runnable_service(service: str, built: dict[str, Path]) -> None:
    venv = built[service]
    module = "stockade." + service.replace("-", "_")
    found = run_python(venv, "-c", f"import {module}.main, stockade.runtime.probe; print({module}.__file__)")
    assert found.returncode == 0, found.stderr[-3000:]
    assert str(venv) in found.stdout, "installed non-editable, not pointing back at the source tree"
    unreachable = run_python(
        venv, "-m", "stockade.runtime.probe", "http://127.0.0.1:9/healthz", "--timeout", "1"
    )
    assert unreachable.returncode == 1 and "unhealthy" in unreachable.stderr


def test_each_target_builds_only_on_the_environment_of_its_service(built: dict[str, Path]) -> None:
    # A target's RUN steps (importing its service as the image's user) are what make a wrong SERVICE build
    # argument fail the build: they must pass on the environment built for that service, fail on another's.
    for target in FULLY_BUILT:
        checks = [args for keyword, args in stages(target)[target] if keyword == "RUN"]
        assert checks, f"target {target} checks nothing when it is built"
        for service in FULLY_BUILT:
            results = [run_in(built[service], ["sh", "-c", check]) for check in checks]
            passed = all(result.returncode == 0 for result in results)
            assert passed == (service == target), (target, service, [r.stderr[-1000:] for r in results])


def test_prompt_api_image_migrates_a_real_database(built: dict[str, Path], postgres_database: str) -> None:
    venv = built["prompt-api"]
    result = run_python(venv, "-m", "stockade.prompt_api.migrate", "--url", postgres_database)
    assert result.returncode == 0, result.stderr[-3000:]
    tables = table_names(postgres_database)
    assert {"alembic_version_identity", "alembic_version_prompt_api"} <= tables
    assert len(tables) > 2, tables


def table_names(url: str) -> set[str]:
    async def names() -> list[str]:
        engine = create_async_engine(url)
        try:
            async with engine.connect() as conn:
                return await conn.run_sync(lambda c: inspect(c).get_table_names())
        finally:
            await engine.dispose()

    return set(asyncio.run(names()))
