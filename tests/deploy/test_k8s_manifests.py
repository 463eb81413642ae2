"""deploy/k8s: manifests parse, every workload is probed, resourced and locked down, and references resolve.

``deployment_problems`` returns problems as strings; the tests run it on the real manifests and on broken
copies of them, so a rule that stops catching its mistake fails here. No cluster is needed.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
TEMPLATE = "secret.template.yaml"
SECRET_NAME = re.compile(r"PASSWORD|SECRET|TOKEN|API_KEY|ACCESS_KEY|PRIVATE_KEY|DATABASE_URL|_URL$", re.I)
HTTP_SERVICES = {"prompt-api": 8101, "model-api": 8102, "guardrail-ingest": 8103, "toxicity-classifier": 8104}
# where Prometheus scrapes each Deployment (deploy/prometheus/prometheus.yml uses the same ports): the HTTP
# port, and the trust-broker's listener of /metrics and /healthz
METRICS_PORTS = {**HTTP_SERVICES, "trust-broker": 8105}


def load(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def pod_spec(doc: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = doc["spec"]["template"]["spec"]
    return spec


def container_problems(where: str, pod: dict[str, Any], container: dict[str, Any]) -> list[str]:
    problems = []
    pod_ctx, ctx = pod.get("securityContext") or {}, container.get("securityContext") or {}
    if ctx.get("runAsNonRoot", pod_ctx.get("runAsNonRoot")) is not True:
        problems.append(f"{where}: runAsNonRoot is not true")
    if ctx.get("runAsUser", pod_ctx.get("runAsUser")) == 0:
        problems.append(f"{where}: runAsUser 0")
    if ctx.get("readOnlyRootFilesystem") is not True:
        problems.append(f"{where}: readOnlyRootFilesystem is not true")
    if ctx.get("allowPrivilegeEscalation") is not False:
        problems.append(f"{where}: allowPrivilegeEscalation is not false")
    if "ALL" not in ((ctx.get("capabilities") or {}).get("drop") or []):
        problems.append(f"{where}: capabilities are not all dropped")
    resources = container.get("resources") or {}
    for kind in ("requests", "limits"):
        if not {"cpu", "memory"} <= set((resources.get(kind) or {}).keys()):
            problems.append(f"{where}: resources.{kind} needs cpu and memory")
    image = str(container.get("image", ""))
    if ":" not in image or image.endswith(":latest"):
        problems.append(f"{where}: image {image!r} has no fixed tag")
    tmp_volumes = {v["name"] for v in pod.get("volumes") or [] if "emptyDir" in v}
    if not any(
        m["mountPath"] == "/tmp" and m["name"] in tmp_volumes for m in container.get("volumeMounts") or []
    ):
        problems.append(f"{where}: no writable /tmp (emptyDir) on a read-only root filesystem")
    for env in container.get("env") or []:
        if "value" in env and SECRET_NAME.search(env["name"]):
            problems.append(f"{where}: {env['name']} is set in clear text; use valueFrom.secretKeyRef")
    return problems


def probe_problems(where: str, container: dict[str, Any], http: bool) -> list[str]:
    problems = []
    ports = {p.get("name") for p in container.get("ports") or []} | {
        p["containerPort"] for p in container.get("ports") or []
    }
    for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
        spec = container.get(probe)
        if not spec:
            problems.append(f"{where}: no {probe}")
            continue
        if http:
            get = spec.get("httpGet") or {}
            if get.get("path") != path:
                problems.append(f"{where}: {probe} must GET {path}")
            if get.get("port") not in ports:
                problems.append(f"{where}: {probe} port {get.get('port')!r} is not a container port")
        elif not (spec.get("exec") or spec.get("httpGet") or spec.get("tcpSocket") or spec.get("grpc")):
            problems.append(f"{where}: {probe} has no handler")
    return problems


def metrics_problems(doc: dict[str, Any]) -> list[str]:
    """A Deployment's pods are annotated for Prometheus pod discovery on a port a container declares."""
    name = doc["metadata"]["name"]
    annotations = doc["spec"]["template"]["metadata"].get("annotations") or {}
    problems = []
    if annotations.get("prometheus.io/scrape") != "true":
        problems.append(f'{name}: pods not annotated prometheus.io/scrape: "true"')
    if annotations.get("prometheus.io/path", "/metrics") != "/metrics":
        problems.append(f"{name}: prometheus.io/path is not /metrics")
    declared = {str(p["containerPort"]) for c in pod_spec(doc)["containers"] for p in c.get("ports") or []}
    if annotations.get("prometheus.io/port") not in declared:
        problems.append(
            f"{name}: prometheus.io/port {annotations.get('prometheus.io/port')!r} is not a container port"
        )
    return problems


def deployment_problems(doc: dict[str, Any]) -> list[str]:
    """Rules for a Deployment (and a Job's pod, without the probes)."""
    name = doc["metadata"]["name"]
    pod = pod_spec(doc)
    problems = []
    if pod.get("automountServiceAccountToken") is not False:
        problems.append(f"{name}: the pod mounts a service-account token it does not need")
    if doc["kind"] == "Deployment":
        labels = doc["spec"]["template"]["metadata"].get("labels") or {}
        selector = doc["spec"]["selector"].get("matchLabels") or {}
        if not selector or any(labels.get(k) != v for k, v in selector.items()):
            problems.append(f"{name}: selector does not match the pod labels")
    for container in pod["containers"]:
        where = f"{name}/{container['name']}"
        problems += container_problems(where, pod, container)
        if doc["kind"] == "Deployment":
            problems += probe_problems(where, container, http=name in HTTP_SERVICES)
    if doc["kind"] == "Deployment":
        problems += metrics_problems(doc)
    return problems


def image_lines(target: str) -> list[str]:
    """Lines of deploy/Dockerfile that make build target ``target``'s image: its stage and the stages it is
    FROM, base first (an image inherits USER, EXPOSE, ENV from them)."""
    stages = {
        match["name"]: (match["base"], match["body"].splitlines())
        for match in re.finditer(
            r"(?ms)^FROM\s+(?P<base>\S+)\s+AS\s+(?P<name>\S+)\s*?$(?P<body>.*?)(?=^FROM\s|\Z)",
            DOCKERFILE.read_text(),
        )
    }
    assert target in stages, f"deploy/Dockerfile has no target {target}"
    lines: list[str] = []
    while target in stages:
        target, body = stages[target]
        lines[:0] = body
    return lines


# --- fixtures --------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def manifests() -> dict[str, list[dict[str, Any]]]:
    return {path.name: load(path) for path in sorted(K8S.glob("*.yaml"))}


@pytest.fixture(scope="module")
def applied(manifests: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Every object kustomization.yaml applies."""
    kustomization = manifests["kustomization.yaml"][0]
    return [doc for name in kustomization["resources"] for doc in manifests[name]]


def of_kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


def containers_of(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [c for d in docs if d["kind"] in ("Deployment", "Job") for c in pod_spec(d)["containers"]]


# --- the real manifests ----------------------------------------------------------------------------------
def test_every_manifest_parses_into_named_objects(manifests: dict[str, list[dict[str, Any]]]) -> None:
    assert manifests
    for name, docs in manifests.items():
        assert docs, name
        for doc in docs:
            assert doc.get("apiVersion") and doc.get("kind"), name
            if doc["kind"] != "Kustomization":
                assert doc["metadata"]["name"], name


def test_kustomization_applies_every_manifest_but_the_secret_template(
    manifests: dict[str, list[dict[str, Any]]],
) -> None:
    kustomization = manifests["kustomization.yaml"][0]
    listed = set(kustomization["resources"])
    assert listed == set(manifests) - {"kustomization.yaml", TEMPLATE}
    images = {i["name"] for i in kustomization["images"]}
    assert images == {c["image"].split(":")[0] for c in containers_of(sum(manifests.values(), []))}


def test_each_service_has_a_deployment_and_each_http_service_a_service(applied: list[dict[str, Any]]) -> None:
    deployments = {d["metadata"]["name"]: d for d in of_kind(applied, "Deployment")}
    services = sorted(p.name for p in (ROOT / "services").iterdir() if (p / "pyproject.toml").is_file())
    assert sorted(deployments) == services
    for svc in of_kind(applied, "Service"):
        target = deployments[svc["metadata"]["name"]]
        pod_labels = target["spec"]["template"]["metadata"]["labels"]
        assert all(pod_labels.get(k) == v for k, v in svc["spec"]["selector"].items())
        names = {p.get("name") for c in pod_spec(target)["containers"] for p in c.get("ports") or []}
        assert all(p["targetPort"] in names for p in svc["spec"]["ports"])
    assert {s["metadata"]["name"] for s in of_kind(applied, "Service")} == set(METRICS_PORTS)


def test_workloads_follow_the_rules(applied: list[dict[str, Any]]) -> None:
    workloads = [d for d in applied if d["kind"] in ("Deployment", "Job")]
    assert len(workloads) == 6
    assert [p for d in workloads for p in deployment_problems(d)] == []


def test_pods_run_as_the_user_of_their_image(applied: list[dict[str, Any]]) -> None:
    for doc in [d for d in applied if d["kind"] in ("Deployment", "Job")]:
        for container in pod_spec(doc)["containers"]:
            target = container["image"].split(":")[0].removeprefix("stockade/")
            user = re.findall(r"(?m)^USER\s+(\d+)", "\n".join(image_lines(target)))[-1]
            assert str(pod_spec(doc)["securityContext"]["runAsUser"]) == user


def test_http_ports_agree_with_settings_and_images(applied: list[dict[str, Any]]) -> None:
    for doc in of_kind(applied, "Deployment"):
        name = doc["metadata"]["name"]
        if name not in HTTP_SERVICES:
            continue
        (container,) = pod_spec(doc)["containers"]
        port = HTTP_SERVICES[name]
        prefix = name.upper().replace("-", "_")
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert env[f"{prefix}_HTTP__PORT"] == str(port)
        assert env[f"{prefix}_HTTP__HOST"] == "0.0.0.0"
        assert [p["containerPort"] for p in container["ports"]] == [port]
        assert f"EXPOSE {port}" in image_lines(name)
        assert all(k.startswith(prefix + "_") for k in env), "each service reads only its own prefix"


def test_metrics_ports_agree_with_settings_and_the_scrape_config(applied: list[dict[str, Any]]) -> None:
    """Each Deployment is scraped on the port its settings give /metrics, the one prometheus.yml names; the
    trust-broker's listener binds every address (its default, 127.0.0.1, is out of a scraper's reach) and its
    Service exposes that port only."""
    scrape = yaml.safe_load((ROOT / "deploy" / "prometheus" / "prometheus.yml").read_text())
    targets = {
        job["job_name"]: int(target.rsplit(":", 1)[1])
        for job in scrape["scrape_configs"]
        for group in job["static_configs"]
        for target in group["targets"]
    }
    for doc in of_kind(applied, "Deployment"):
        name = doc["metadata"]["name"]
        annotations = doc["spec"]["template"]["metadata"]["annotations"]
        assert annotations["prometheus.io/port"] == str(METRICS_PORTS[name]) == str(targets[name]), name
    broker = next(d for d in of_kind(applied, "Deployment") if d["metadata"]["name"] == "trust-broker")
    (container,) = pod_spec(broker)["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["TRUST_BROKER_HTTP__HOST"] == "0.0.0.0"
    assert env["TRUST_BROKER_HTTP__PORT"] == "8105"
    assert container["ports"] == [{"name": "metrics", "containerPort": 8105}]
    from stockade.trust_broker.settings import TrustBrokerSettings

    assert TrustBrokerSettings.model_fields["http"].default_factory().port == 8105  # type: ignore[misc]
    service = next(s for s in of_kind(applied, "Service") if s["metadata"]["name"] == "trust-broker")
    assert service["spec"]["ports"] == [{"name": "metrics", "port": 8105, "targetPort": "metrics"}]


def test_every_secret_and_config_reference_resolves(
    manifests: dict[str, list[dict[str, Any]]], applied: list[dict[str, Any]]
) -> None:
    secrets = {d["metadata"]["name"]: set(d["stringData"]) for d in manifests[TEMPLATE]}
    configs = {d["metadata"]["name"]: set(d["data"]) for d in of_kind(applied, "ConfigMap")}
    for container in containers_of(applied):
        for env in container.get("env") or []:
            ref = env.get("valueFrom") or {}
            if "secretKeyRef" in ref:
                assert ref["secretKeyRef"]["key"] in secrets[ref["secretKeyRef"]["name"]], env
            if "configMapKeyRef" in ref:
                assert ref["configMapKeyRef"]["key"] in configs[ref["configMapKeyRef"]["name"]], env
        for source in container.get("envFrom") or []:
            assert source["secretRef"]["name"] in secrets
    for doc in of_kind(applied, "Deployment"):
        for volume in pod_spec(doc).get("volumes") or []:
            if "secret" in volume:
                keys = {i["key"] for i in volume["secret"].get("items") or []}
                assert keys <= secrets[volume["secret"]["secretName"]]


def test_secret_template_holds_placeholders_only(manifests: dict[str, list[dict[str, Any]]]) -> None:
    for doc in manifests[TEMPLATE]:
        assert doc["kind"] == "Secret"
        for key, value in doc["stringData"].items():
            assert "REPLACE_ME" in value, f"{doc['metadata']['name']}.{key} must be a placeholder"


def test_no_secret_detector_finding_in_the_manifests() -> None:
    from detect_secrets import SecretsCollection
    from detect_secrets.settings import default_settings

    with default_settings():
        found = SecretsCollection()
        for path in sorted(K8S.glob("*.yaml")):
            if (
                path.name != TEMPLATE
            ):  # its keywords are placeholders: test_secret_template_holds_placeholders_only
                found.scan_file(str(path))
    assert [(f, s.type) for f, secrets in found.data.items() for s in secrets] == []


# --- the checker catches its mistakes --------------------------------------------------------------------
def container(doc: dict[str, Any]) -> dict[str, Any]:
    first: dict[str, Any] = pod_spec(doc)["containers"][0]
    return first


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda d: container(d).pop("readinessProbe"), "no readinessProbe"),
        (lambda d: container(d).pop("livenessProbe"), "no livenessProbe"),
        (lambda d: container(d)["readinessProbe"]["httpGet"].update(path="/healthz"), "must GET /readyz"),
        (lambda d: container(d)["livenessProbe"]["httpGet"].update(port="web"), "not a container port"),
        (lambda d: pod_spec(d)["securityContext"].pop("runAsNonRoot"), None),  # container keeps it
        (
            lambda d: (
                pod_spec(d)["securityContext"].pop("runAsNonRoot"),
                container(d)["securityContext"].pop("runAsNonRoot"),
            ),
            "runAsNonRoot is not true",
        ),
        (lambda d: pod_spec(d)["securityContext"].update(runAsUser=0), "runAsUser 0"),
        (lambda d: container(d)["securityContext"].update(readOnlyRootFilesystem=False), "readOnlyRoot"),
        (lambda d: container(d)["securityContext"].pop("allowPrivilegeEscalation"), "allowPrivilegeEscal"),
        (lambda d: container(d)["securityContext"].update(capabilities={}), "not all dropped"),
        (lambda d: container(d)["resources"].pop("limits"), "resources.limits"),
        (lambda d: container(d).update(image="stockade/prompt-api:latest"), "no fixed tag"),
        (lambda d: container(d).update(image="stockade/prompt-api"), "no fixed tag"),
        (lambda d: container(d).pop("volumeMounts"), "no writable /tmp"),
        (lambda d: container(d)["env"].append({"name": "X_PASSWORD", "value": "hunter2"}), "clear text"),
        (lambda d: pod_spec(d).pop("automountServiceAccountToken"), "service-account token"),
        (lambda d: d["spec"]["selector"]["matchLabels"].update(app="other"), "selector"),
        (lambda d: d["spec"]["template"]["metadata"].pop("annotations"), "prometheus.io/scrape"),
        (
            lambda d: d["spec"]["template"]["metadata"]["annotations"].update({"prometheus.io/port": "9090"}),
            "is not a container port",
        ),
        (
            lambda d: d["spec"]["template"]["metadata"]["annotations"].update({"prometheus.io/path": "/"}),
            "prometheus.io/path",
        ),
    ],
)
def test_deployment_checker_catches_a_mistake(
    manifests: dict[str, list[dict[str, Any]]], mutate: Any, expected: str | None
) -> None:
    real = of_kind(manifests["prompt-api.yaml"], "Deployment")[0]
    bad = copy.deepcopy(real)
    mutate(bad)
    assert bad != real
    problems = deployment_problems(bad)
    if expected is None:
        assert problems == []
    else:
        assert any(expected in p for p in problems), problems


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for rule in selector.get("matchExpressions") or []:
        assert rule["operator"] == "In", rule
        if labels.get(rule["key"]) not in rule["values"]:
            return False
    return True


def test_network_policies_deny_by_default_and_open_only_named_ports(applied: list[dict[str, Any]]) -> None:
    """Review N8: nothing reaches a pod unless a policy allows it; each allowed port is one its pods name; the
    trust-broker's metrics port only from the monitoring namespace."""
    policies = {p["metadata"]["name"]: p["spec"] for p in of_kind(applied, "NetworkPolicy")}
    assert policies["default-deny-ingress"] == {"podSelector": {}, "policyTypes": ["Ingress"]}
    pods = {d["metadata"]["name"]: d["spec"]["template"] for d in of_kind(applied, "Deployment")}
    opened: dict[str, set[str]] = {}
    for name, spec in policies.items():
        selected = [n for n, t in pods.items() if _selects(spec["podSelector"], t["metadata"]["labels"])]
        assert selected, f"{name} selects no pod"
        for rule in spec.get("ingress", []):
            for port in rule["ports"]:
                for pod in selected:
                    named = {p["name"] for c in pods[pod]["spec"]["containers"] for p in c.get("ports") or []}
                    assert port["port"] in named, (name, pod, port)
                    opened.setdefault(pod, set()).add(port["port"])
    assert set(opened) == set(pods)  # every service is reachable where it must be, and only there
    broker = policies["trust-broker-metrics-from-monitoring"]["ingress"]
    assert broker == [
        {
            "from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}],
            "ports": [{"protocol": "TCP", "port": "metrics"}],
        }
    ]
