"""Offline schema checks of deploy/: ``kubectl kustomize`` renders deploy/k8s, ``kubernetes-validate --strict``
checks every rendered object (and the Secret template) against the Kubernetes API schemas of the versions we
target, and ``yamllint --strict`` with the repository's ``.yamllint`` checks every YAML file of deploy/ and the
compose files.

No cluster and no network: kubernetes-validate ships its schemas in the wheel (checked once inside
``unshare -n``), kubectl's kustomize is built in. Each check is also run on a broken copy, so a check that stops
catching its mistake fails here.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from stockade.testing.availability import server_unavailable

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
BIN = Path(sys.executable).parent
# The oldest Kubernetes minor the manifests support and the newest one kubernetes-validate bundles: a field
# removed, renamed or not yet GA in either fails. Raise the floor when the oldest leaves upstream support.
K8S_VERSIONS = ("1.31.0", "1.37.0")
YAML_PATHS = ["deploy", "docker-compose.yml", "tests/deploy/compose"]
EXPECTED_KINDS = {
    "Namespace": 1,
    "ConfigMap": 1,
    "Job": 1,
    "Deployment": 5,  # prompt-api, model-api, guardrail-ingest, toxicity-classifier, trust-broker
    "Service": 5,  # the four HTTP services and the trust-broker's metrics port
    "NetworkPolicy": 4,  # default deny, public APIs, toxicity-classifier, trust-broker metrics
}


def kubectl() -> str:
    found = shutil.which("kubectl") or ("/usr/bin/kubectl" if Path("/usr/bin/kubectl").exists() else None)
    if found is None:
        server_unavailable("kubectl", "install kubectl (its built-in kustomize renders deploy/k8s)")
    return found


def kustomize(directory: Path) -> str:
    done = subprocess.run(
        [kubectl(), "kustomize", str(directory)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def validate(path: Path, version: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "kubernetes-validate"), "--strict", "-k", version, "--no-warn", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )


def yamllint(*paths: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "yamllint"), "--strict", "-f", "parsable", "-c", str(ROOT / ".yamllint"), *paths],
        capture_output=True,
        text=True,
        cwd=cwd,
        check=False,
    )


def passed(output: str) -> list[str]:
    """``kind/name`` of each resource kubernetes-validate reports as passed."""
    return re.findall(r"passed for resource (\S+) against version", output)


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_every_rendered_object_validates_strictly(version: str, tmp_path: Path) -> None:
    rendered = kustomize(K8S)
    docs = [doc for doc in yaml.safe_load_all(rendered) if doc]
    kinds = {kind: sum(d["kind"] == kind for d in docs) for kind in {d["kind"] for d in docs}}
    assert kinds == EXPECTED_KINDS
    out = tmp_path / "rendered.yaml"
    out.write_text(rendered)
    done = validate(out, version)
    assert done.returncode == 0, done.stdout + done.stderr
    expected = sorted(f"{d['kind'].lower()}/{d['metadata']['name']}" for d in docs)
    assert sorted(passed(done.stdout + done.stderr)) == expected


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_secret_template_validates_strictly(version: str) -> None:
    done = validate(K8S / "secret.template.yaml", version)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(passed(done.stdout + done.stderr)) == [
        "secret/stockade-agent-keys",
        "secret/stockade-secrets",
        "secret/stockade-trust-registry",
    ]


def test_strict_validation_refuses_a_misspelt_field(tmp_path: Path) -> None:
    broken = tmp_path / "k8s"
    shutil.copytree(K8S, broken)
    manifest = broken / "prompt-api.yaml"
    text = manifest.read_text()
    assert "            timeoutSeconds: 3\n" in text
    manifest.write_text(text.replace("            timeoutSeconds: 3\n", "            timeoutSecond: 3\n", 1))
    out = tmp_path / "rendered.yaml"
    out.write_text(kustomize(broken))
    done = validate(out, K8S_VERSIONS[0])
    assert done.returncode != 0
    assert "deployment/prompt-api" in done.stdout + done.stderr
    assert "'timeoutSecond' was unexpected" in done.stdout + done.stderr


def test_validation_refuses_a_field_the_target_version_lacks(tmp_path: Path) -> None:
    """A field newer than the floor: pod-level ``resources`` (in the schema from 1.32) fails on 1.31."""
    docs = [doc for doc in yaml.safe_load_all(kustomize(K8S)) if doc]
    [deployment] = [d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "model-api"]
    deployment["spec"]["template"]["spec"]["resources"] = {"limits": {"cpu": "1"}}
    out = tmp_path / "newer.yaml"
    out.write_text(yaml.safe_dump(deployment))
    assert validate(out, "1.34.0").returncode == 0
    refused = validate(out, K8S_VERSIONS[0])
    assert refused.returncode != 0 and "'resources' was unexpected" in refused.stdout + refused.stderr


def test_yamllint_passes_on_deploy_and_compose_files() -> None:
    files = [
        ROOT / "docker-compose.yml",
        *(ROOT / "deploy").rglob("*.y*ml"),
        *(ROOT / "tests/deploy/compose").glob("*.y*ml"),
    ]
    assert len(files) >= 12
    done = yamllint(*YAML_PATHS)
    assert done.returncode == 0, done.stdout + done.stderr


def test_yamllint_refuses_broken_yaml(tmp_path: Path) -> None:
    broken = tmp_path / "deploy"
    shutil.copytree(ROOT / "deploy" / "k8s", broken / "k8s")
    namespace = broken / "k8s" / "namespace.yaml"
    # a duplicated key (the second silently wins in most parsers) and a YAML 1.1 boolean
    namespace.write_text(namespace.read_text() + "metadata:\n  name: other\n")
    config = broken / "k8s" / "configmap.yaml"
    config.write_text(config.read_text().replace('HTTP_PROXY_HEADERS: "false"', "HTTP_PROXY_HEADERS: no"))
    done = yamllint("deploy", cwd=tmp_path)
    assert done.returncode != 0
    assert "namespace.yaml" in done.stdout and "(key-duplicates)" in done.stdout
    assert "configmap.yaml" in done.stdout and "(truthy)" in done.stdout
