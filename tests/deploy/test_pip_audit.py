"""Dependency audit: ``pip-audit`` over every package ``uv.lock`` pins (all members, extras and groups).

The locked set is exported with ``uv export --frozen`` and audited with ``--no-deps --disable-pip`` (no
resolution, no install: exactly the pinned versions). The test fails on a known vulnerability that has a fixed
version, unless it is listed in ``IGNORED`` with the reason; a vulnerability without a fix is printed. Every
pinned package must have been audited: pip-audit reports a package it could not look up as skipped and still
says "No known vulnerabilities found", so a skipped package fails the test too.

pip-audit needs a vulnerability service: PyPI's per-release JSON API (``/pypi/<name>/<version>/json``, its
default) or OSV (``api.osv.dev``). When neither answers, the test is skipped with the reason, under ``CI=true``
too: unlike the project's own servers, the advisory database is an outside service no test can start, and this
project's machines reach neither (PyPI answers project pages but 404s every per-release page; api.osv.dev does
not resolve). Where either answers (a developer's machine, a hosted CI), the audit runs and gates.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
SERVICE = "vulnerability database for pip-audit"
# Vulnerability ids (PYSEC-/GHSA-/CVE-) accepted for now, each with the reason. Keep it short and dated.
IGNORED: dict[str, str] = {}
# A release with published, fixed vulnerabilities: the audit must report it (proves the test can fail).
KNOWN_VULNERABLE = "jinja2==2.10"


def locked_version(package: str) -> str:
    lock = tomllib.loads((ROOT / "uv.lock").read_text())
    return next(p["version"] for p in lock["package"] if p["name"] == package)


def reachable_service() -> str:
    """``pypi`` or ``osv``, whichever answers for a release that exists; else skip saying why."""
    url = f"https://pypi.org/pypi/pip-audit/{locked_version('pip-audit')}/json"
    tried = []
    try:
        answer = httpx.get(url, timeout=20, follow_redirects=True)
        if answer.status_code == 200 and "vulnerabilities" in answer.json():
            return "pypi"
        tried.append(f"GET {url} answered {answer.status_code}")
    except (httpx.HTTPError, ValueError) as exc:
        tried.append(f"GET {url}: {exc!r}")
    osv = "https://api.osv.dev/v1/query"
    try:
        query = {"package": {"name": "jinja2", "ecosystem": "PyPI"}, "version": "2.10"}
        answer = httpx.post(osv, json=query, timeout=20)
        if answer.status_code == 200:
            return "osv"
        tried.append(f"POST {osv} answered {answer.status_code}")
    except httpx.HTTPError as exc:
        tried.append(f"POST {osv}: {exc!r}")
    pytest.skip(
        f"{SERVICE} unreachable: "
        + "; ".join(tried)
        + " (pip-audit needs PyPI's per-release JSON API or OSV)"
    )


def export_locked(tmp_path: Path) -> Path:
    out = tmp_path / "locked.txt"
    subprocess.run(
        [str(BIN / "uv"), "export", "--frozen", "--format", "requirements-txt", "--all-packages"]
        + ["--all-extras", "--all-groups", "--no-emit-workspace", "--no-hashes", "--quiet", "-o", str(out)],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    return out


def audit(requirements: Path, service: str) -> dict[str, Any]:
    done = subprocess.run(
        [str(BIN / "pip-audit"), "-r", str(requirements), "--no-deps", "--disable-pip", "-s", service]
        + ["--progress-spinner", "off", "-f", "json", "--timeout", "30"],
        capture_output=True,
        text=True,
        check=False,
    )
    # exit 1 means "vulnerabilities found": the report is still JSON on stdout
    assert done.returncode in (0, 1), done.stderr[-4000:]
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def problems(report: dict[str, Any], ignored: dict[str, str]) -> tuple[list[str], list[str]]:
    """(failures, notes): fixable, not ignored vulnerabilities and unaudited packages fail; unfixable ones are
    notes."""
    failures, notes = [], []
    for dep in report["dependencies"]:
        where = f"{dep['name']}=={dep.get('version', '?')}"
        if dep.get("skip_reason"):
            failures.append(f"{where} not audited: {dep['skip_reason']}")
        for vuln in dep.get("vulns", []):
            ids = {vuln["id"], *vuln.get("aliases", [])}
            if ids & ignored.keys():
                notes.append(f"{where} {vuln['id']} ignored: {ignored[next(iter(ids & ignored.keys()))]}")
            elif vuln.get("fix_versions"):
                failures.append(f"{where} {vuln['id']}: fixed in {', '.join(vuln['fix_versions'])}")
            else:
                notes.append(f"{where} {vuln['id']}: no fixed version yet")
    return failures, notes


def test_problems_fail_on_fixable_and_unaudited_only() -> None:
    report = {
        "dependencies": [
            {"name": "a", "version": "1", "vulns": [{"id": "PYSEC-1", "fix_versions": ["2"], "aliases": []}]},
            {"name": "b", "version": "1", "vulns": [{"id": "GHSA-x", "fix_versions": [], "aliases": []}]},
            {
                "name": "c",
                "version": "1",
                "vulns": [{"id": "PYSEC-3", "fix_versions": ["2"], "aliases": ["CVE-9"]}],
            },
            {"name": "d", "skip_reason": "Dependency not found on PyPI and could not be audited: d (1)"},
            {"name": "e", "version": "1", "vulns": []},
        ]
    }
    failures, notes = problems(report, {"CVE-9": "not reachable from our code"})
    assert failures == [
        "a==1 PYSEC-1: fixed in 2",
        "d==? not audited: Dependency not found on PyPI and could not be audited: d (1)",
    ]
    assert notes == ["b==1 GHSA-x: no fixed version yet", "c==1 PYSEC-3 ignored: not reachable from our code"]


@pytest.mark.slow
def test_locked_dependencies_have_no_fixable_vulnerabilities(tmp_path: Path) -> None:
    service = reachable_service()
    requirements = export_locked(tmp_path)
    pinned = [
        line for line in requirements.read_text().splitlines() if "==" in line and not line.startswith("#")
    ]
    assert len(pinned) > 100
    report = audit(requirements, service)
    failures, notes = problems(report, IGNORED)
    print("\n".join(notes))
    assert len(report["dependencies"]) == len({line.split("==")[0] for line in pinned})
    assert not failures, "\n".join(failures)


@pytest.mark.slow
def test_audit_reports_a_known_vulnerable_release(tmp_path: Path) -> None:
    service = reachable_service()
    requirements = tmp_path / "vulnerable.txt"
    requirements.write_text(KNOWN_VULNERABLE + "\n")
    failures, _ = problems(audit(requirements, service), IGNORED)
    assert any(f.startswith(KNOWN_VULNERABLE) and "fixed in" in f for f in failures), failures
