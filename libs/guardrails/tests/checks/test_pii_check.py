"""PII/PHI detection with Presidio + the spaCy model, per-entity policies, masking and audit events."""

from __future__ import annotations

import pytest

from stockade.guardrails import Action, GuardrailSystem
from stockade.guardrails.checks.config import ContentChecksConfig
from stockade.guardrails.events import EventKind
from stockade.guardrails.testing import InMemoryRecorder

pytestmark = pytest.mark.ml

pytest.importorskip("presidio_analyzer", reason="needs the 'pii' extra")

BASE = {"classification": {"enabled": False}, "exfiltration": {"enabled": False}}


def system(recorder: InMemoryRecorder | None = None, **pii: object) -> GuardrailSystem:
    return GuardrailSystem({"guardrails": {"checks": {**BASE, "pii": pii}}}, recorder=recorder)


async def test_person_and_email_are_masked_with_type_placeholders() -> None:
    verdict = await system().check_input("Please email John Smith at john.smith@example.com please.")
    assert verdict.passed and verdict.action is Action.MASK
    assert verdict.masked_text == "Please email <PERSON> at <EMAIL_ADDRESS> please."
    assert {f.type for f in verdict.findings} == {"PERSON", "EMAIL_ADDRESS"}


async def test_block_policy_blocks_and_redact_policy_removes() -> None:
    sys_ = system(entity_policies={"CREDIT_CARD": {"action": "block"}, "EMAIL_ADDRESS": {"action": "redact"}})
    blocked = await sys_.check_input("card 4111 1111 1111 1111 please")
    assert blocked.blocked and "CREDIT_CARD" in (blocked.error or "")
    redacted = await sys_.check_output("write to a.b@example.org now")
    assert redacted.masked_text == "write to  now"


async def test_hash_policy_with_salt_is_stable_and_hides_value() -> None:
    sys_ = system(entity_policies={"EMAIL_ADDRESS": {"action": "hash"}}, hash_salt="0123456789abcdef-salt")
    a = await sys_.check_input("mail a.b@example.org")
    b = await sys_.check_input("mail a.b@example.org")
    assert a.masked_text == b.masked_text
    assert a.masked_text is not None and "example.org" not in a.masked_text and len(a.masked_text) == 5 + 64


async def test_per_entity_threshold_and_allow() -> None:
    text = "Contact John Smith at john.smith@example.com"
    high = system(entity_policies={"PERSON": {"threshold": 0.99}})
    assert {f.type for f in (await high.check_input(text)).findings} == {"EMAIL_ADDRESS"}
    allow = system(entity_policies={"PERSON": {"action": "allow"}}, entities=["PERSON"])
    verdict = await allow.check_input(text)
    assert verdict.action is Action.ALLOW and [f.type for f in verdict.findings] == ["PERSON"]


@pytest.mark.parametrize(
    ("text", "entity"),
    [
        ("Patient MRN: 00482913 was admitted.", "MEDICAL_RECORD_NUMBER"),
        ("Referring provider NPI 1234567893 signed.", "US_NPI"),
        ("Prescriber DEA number AB1234563 on file.", "DEA_NUMBER"),
        ("Insurance member ID: XKW847261953 for the claim.", "HEALTH_PLAN_ID"),
        ("Diagnosis code E11.9 recorded at the visit.", "ICD10_CODE"),
    ],
)
async def test_phi_recognizers(text: str, entity: str) -> None:
    verdict = await system(entities=[entity]).check_input(text)
    assert [f.type for f in verdict.findings] == [entity]


@pytest.mark.parametrize(
    ("text", "entity"),
    [
        ("Referring provider NPI 1234567890 signed.", "US_NPI"),  # bad check digit
        ("Prescriber DEA number AB1234564 on file.", "DEA_NUMBER"),  # bad checksum
        ("The train E11 leaves at noon.", "ICD10_CODE"),  # no clinical context
    ],
)
async def test_phi_recognizers_reject_invalid_or_out_of_context(text: str, entity: str) -> None:
    assert (await system(entities=[entity]).check_input(text)).findings == []


async def test_audit_entries_carry_type_score_action_session_and_time_not_value() -> None:
    recorder = InMemoryRecorder()
    await system(recorder, entities=["EMAIL_ADDRESS"]).check_input(
        "You can reach me at jane.doe@example.com", session_id="sess-42"
    )
    [audit] = recorder.of_kind(EventKind.PII_AUDIT)
    assert audit.session_id == "sess-42" and audit.occurred_at.tzinfo is not None
    assert audit.payload["entity_type"] == "EMAIL_ADDRESS" and audit.payload["action"] == "mask"
    assert 0 < audit.payload["score"] <= 1
    assert "jane.doe" not in audit.model_dump_json()
    assert len(recorder.of_kind(EventKind.CHECK)) == 1


def test_missing_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from stockade.guardrails import MissingExtraError
    from stockade.guardrails.checks.pii.check import PiiCheck

    monkeypatch.setitem(sys.modules, "presidio_anonymizer", None)
    with pytest.raises(MissingExtraError, match=r"\[pii\]"):
        PiiCheck(ContentChecksConfig().pii)
