"""The guardrails classification check's ``remote`` backend speaks this service's wire protocol: pointed at the
real service (its toxicity model standing in for a hosted attack classifier, its labels mapped to attack
classes), a long text goes in character windows batched per request, and the hateful window is found."""

from __future__ import annotations

from typing import Any

from stockade.guardrails import Action, GuardrailSystem
from stockade.guardrails.checks.classification.remote import char_windows

KEY = "test-bearer-key-0123456789"
HATEFUL = "those people are subhuman animals, kill them all"
NEUTRAL = "Thanks for the help with my tax forms, have a lovely weekend. "
LABELS = {"toxic": "injection", "offensive": "jailbreak", "non-toxic": "benign"}


def system(url: str, **remote: Any) -> GuardrailSystem:
    settings = {"url": f"{url}/classify", "retries": 0, "label_map": LABELS, **remote}
    checks = {
        "pii": {"enabled": False},
        "exfiltration": {"enabled": False},
        "classification": {"remote": settings, "stages": ["input", "context"]},
    }
    return GuardrailSystem({"guardrails": {"checks": checks}})


async def test_remote_classifier_windows_a_long_text_over_the_real_service(service_url):
    # windows of 64 characters (this small model is easily diluted by neutral words), 4 per request
    text = NEUTRAL * 3 + HATEFUL + " " + NEUTRAL * 3
    guard = system(service_url, window_chars=64, overlap_chars=32, max_batch=4)
    verdict = await guard.check_context(text, source="document")
    neutral = await guard.check_context(NEUTRAL * 7, source="document")
    assert verdict.blocked and verdict.action is Action.BLOCK
    assert verdict.findings, verdict.error
    [finding] = verdict.findings
    assert finding.type == "injection" and finding.detail["windows"] == len(char_windows(text, 64, 32)) > 8
    assert finding.start is not None and finding.end is not None
    at = text.index(HATEFUL)
    assert finding.start < at + len(HATEFUL) and at < finding.end  # the window holds (most of) it
    assert neutral.passed and neutral.findings == []


async def test_remote_classifier_sends_the_key_from_its_environment_variable(keyed_service_url, monkeypatch):
    monkeypatch.setenv("GUARD_KEY", KEY)
    allowed = await system(keyed_service_url, api_key_env="GUARD_KEY").check_input(NEUTRAL)
    monkeypatch.setenv("GUARD_KEY", "wrong-key")
    refused = await system(keyed_service_url, api_key_env="GUARD_KEY").check_input(NEUTRAL)
    assert allowed.passed and allowed.action is Action.ALLOW
    assert refused.blocked and "returned 401" in (refused.error or "")
