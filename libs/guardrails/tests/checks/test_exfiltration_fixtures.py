"""The fixture corpus (tests/fixtures/secrets, synthetic values only) covers every key format and every veto:
each format's fixture is reported under the format's name, and each veto's fixture is rejected by that veto
with nothing reported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stockade.guardrails.checks.exfiltration.formats import FORMATS
from stockade.guardrails.checks.exfiltration.policy import SecretsPolicy
from stockade.guardrails.checks.exfiltration.secrets import VETO_NAMES, SecretScanner

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "secrets"
FORMAT_TEXTS: dict[str, str] = json.loads((FIXTURES / "formats.json").read_text(encoding="utf-8"))
VETO_CASES: list[dict[str, object]] = json.loads((FIXTURES / "vetoes.json").read_text(encoding="utf-8"))
SCANNER = SecretScanner(use_detect_secrets=False)


def test_every_format_has_a_fixture() -> None:
    names = {f.name for f in FORMATS}
    assert sorted(names - FORMAT_TEXTS.keys()) == []  # a format without a fixture
    assert sorted(FORMAT_TEXTS.keys() - names) == []  # a fixture of a format that is gone


def test_every_veto_has_a_fixture() -> None:
    covered = {str(case["veto"]) for case in VETO_CASES}
    assert sorted(VETO_NAMES - covered) == []
    assert sorted(covered - VETO_NAMES) == []


@pytest.mark.parametrize("name", sorted(FORMAT_TEXTS))
def test_format_fixture_is_reported_under_its_format(name: str) -> None:
    text = FORMAT_TEXTS[name]
    report = SCANNER.report(text)
    assert name in {h.rule for h in report.hits}, report.veto_counts


@pytest.mark.parametrize("case", VETO_CASES, ids=[str(c["veto"]) for c in VETO_CASES])
def test_veto_fixture_is_rejected_by_its_veto(case: dict[str, object]) -> None:
    policy = SecretsPolicy(report_weak_passwords=bool(case.get("report_weak_passwords", True)))
    report = SecretScanner(use_detect_secrets=False, policy=policy).report(str(case["text"]))
    assert report.hits == []
    assert report.veto_counts[str(case["veto"])] >= 1, report.veto_counts


def test_weak_password_fixture_is_a_finding_under_the_default_policy() -> None:
    (case,) = [c for c in VETO_CASES if c["veto"] == "weak_password"]
    assert [h.rule for h in SCANNER.scan(str(case["text"]))] == ["credential_in_context"]
