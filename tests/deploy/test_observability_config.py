"""deploy/prometheus/prometheus.yml and deploy/grafana/stockade-dashboard.json against the code.

Every metric a dashboard query names is one the services export (names collected from the prometheus-client
registry after importing every module that defines metrics), every Stockade metric has a panel, and the scrape
targets are the services' own ports. ``promtool`` (Debian's prometheus package; dev.py extracts it into the venv)
checks the scrape configuration and the syntax of every query (as recording rules).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from stockade.testing.availability import server_unavailable

ROOT = Path(__file__).resolve().parents[2]
PROMETHEUS = ROOT / "deploy" / "prometheus" / "prometheus.yml"
DASHBOARD = ROOT / "deploy" / "grafana" / "stockade-dashboard.json"
METRIC = re.compile(r"\b((?:stockade|process|python)_[a-z0-9_]+)\b")


def _exported() -> set[str]:
    import stockade.guardrail_ingest.metrics
    import stockade.trust_broker.metrics  # noqa: F401  # the service metrics join the shared registry
    from stockade.runtime.metrics import exported_names

    return exported_names()


def _panels() -> list[dict[str, Any]]:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return [p for p in dashboard["panels"] if p["type"] != "row"]


def _expressions() -> list[str]:
    return [target["expr"] for panel in _panels() for target in panel["targets"]]


def test_every_dashboard_query_names_metrics_the_code_exports() -> None:
    exported = _exported()
    for panel in _panels():
        assert panel["targets"], f"panel {panel['title']!r} has no query"
        for target in panel["targets"]:
            names = set(METRIC.findall(target["expr"]))
            assert names, f"panel {panel['title']!r}: no metric in {target['expr']!r}"
            unknown = names - exported
            assert not unknown, f"panel {panel['title']!r} queries metrics nothing exports: {sorted(unknown)}"


def test_every_stockade_metric_has_a_panel() -> None:
    used = {name for expr in _expressions() for name in METRIC.findall(expr)}
    families = {
        re.sub(r"_(total|bucket|count|sum|created)$", "", n) for n in _exported() if n.startswith("stockade_")
    }
    shown = {re.sub(r"_(total|bucket|count|sum)$", "", n) for n in used}
    assert families - shown == set(), "metrics without a panel in the dashboard"


def test_dashboard_structure() -> None:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    assert dashboard["uid"] and dashboard["title"] and dashboard["schemaVersion"] >= 36
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert (
        variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    )
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids)), "panel ids repeat"
    for panel in _panels():
        assert panel["datasource"]["uid"] == "${datasource}"
        assert (
            set(panel["gridPos"]) == {"h", "w", "x", "y"}
            and panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24
        )
        refs = [t["refId"] for t in panel["targets"]]
        assert len(refs) == len(set(refs))
        for expr in (t["expr"] for t in panel["targets"]):
            assert expr.count("(") == expr.count(")") and expr.count("{") == expr.count("}"), expr
            assert "$" not in expr.replace("$job", ""), f"unknown variable in {expr!r}"


def _service_ports() -> dict[str, int]:
    from stockade.guardrail_ingest.settings import GuardrailIngestSettings
    from stockade.model_api.settings import ModelApiSettings
    from stockade.prompt_api.settings import PromptApiSettings
    from stockade.toxicity_classifier.settings import ToxicityClassifierSettings
    from stockade.trust_broker.settings import TrustBrokerSettings

    kinds = (
        PromptApiSettings,
        ModelApiSettings,
        GuardrailIngestSettings,
        ToxicityClassifierSettings,
        TrustBrokerSettings,
    )
    return {
        str(kind.model_fields["service_name"].default): kind.model_fields["http"].default_factory().port  # type: ignore[misc]
        for kind in kinds
    }


def test_scrape_config_targets_every_service_on_its_port() -> None:
    config = yaml.safe_load(PROMETHEUS.read_text(encoding="utf-8"))
    targets: dict[str, list[str]] = {}
    for job in config["scrape_configs"]:
        assert job.get("metrics_path", "/metrics") == "/metrics"
        targets[job["job_name"]] = [t for group in job["static_configs"] for t in group["targets"]]
    expected = {service: [f"{service}:{port}"] for service, port in _service_ports().items()}
    assert targets == expected


def _promtool() -> str:
    found = shutil.which("promtool") or shutil.which("promtool", path=str(Path(sys.executable).parent))
    if found is None:
        server_unavailable(
            "promtool",
            "run `python3 dev.py test` (it extracts promtool from Debian's prometheus package into the venv) "
            "or put promtool on PATH",
        )
    return found


def test_promtool_accepts_the_scrape_config_and_every_query(tmp_path: Path) -> None:
    promtool = _promtool()
    checked = subprocess.run(
        [promtool, "check", "config", str(PROMETHEUS)], capture_output=True, text=True, timeout=60
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    exprs = [e.replace("$job", ".*") for e in _expressions()]
    rules = {
        "groups": [
            {
                "name": "dashboard",
                "rules": [{"record": f"stockade:panel_{i}", "expr": e} for i, e in enumerate(exprs)],
            }
        ]
    }
    path = tmp_path / "dashboard-rules.yml"
    path.write_text(yaml.safe_dump(rules), encoding="utf-8")
    checked = subprocess.run(
        [promtool, "check", "rules", str(path)], capture_output=True, text=True, timeout=60
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


@pytest.mark.parametrize("broken", ["sum(rate(stockade_http_request_duration_seconds_count[5m])"])
def test_promtool_refuses_a_broken_query(tmp_path: Path, broken: str) -> None:
    """The rules check above can fail: a query with an unclosed parenthesis is refused."""
    promtool = _promtool()
    path = tmp_path / "broken.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "g", "rules": [{"record": "x:y", "expr": broken}]}]}))
    checked = subprocess.run(
        [promtool, "check", "rules", str(path)], capture_output=True, text=True, timeout=60
    )
    assert checked.returncode != 0
