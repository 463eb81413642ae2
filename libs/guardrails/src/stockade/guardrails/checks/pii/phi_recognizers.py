"""PHI recognizers Presidio lacks: medical record numbers, US NPI, DEA numbers, health-plan member IDs and
ICD-10 codes. Context-dependent ones score low alone and pass the threshold only next to their context words
(Presidio's context enhancer adds 0.35). A number right after its label ("MRN: 123-45-678", "Member ID
XYZ-987654321", "subscriber # W1234 5678") is found whole, separators included, when it holds 5 to 20 digits."""

from __future__ import annotations

import re
from typing import Any

from stockade.guardrails.checks.pii.gates import gate_patterns
from stockade.guardrails.checks.pii.phi_checksums import dea_valid, npi_valid
from stockade.guardrails.checks.pii.postfilter import line_local
from stockade.guardrails.extras import require

# Presidio's default flags include IGNORECASE; these patterns rely on letter case.
CASE_SENSITIVE = re.DOTALL | re.MULTILINE

_MRN_LABEL = r"\b(?:MRN|MR\#|medical\s+record\s+(?:number|no\.?|\#))(?:\s+is)?[\s:#\-]{0,3}"
_MEMBER_LABEL = (
    r"\b(?:member|subscriber|beneficiary|health\s+plan)\s*(?:id|\#|no\.?|number)(?:\s+is)?[\s:#\-]{0,3}"
)
# a labelled number: up to 3 letters then a digit; groups joined by "-" or ".", or by a space before a digit
LABELLED_NUMBER = r"(?=[A-Z]{0,3}\d)[A-Z0-9]{1,12}(?:[\-.][A-Z0-9]{1,12}|\s\d[A-Z0-9]{1,11}){0,3}\b"


# Necessary conditions of the lookbehind-led patterns (gates.py): the first word of their label.
PHI_GATES = {
    "MedicalRecordNumberRecognizer": {"mrn_prefixed": r"(?i)(?:MRN|MR\#|medical\s+record)"},
    "HealthPlanMemberIdRecognizer": {
        "member_id_labelled": r"(?i)(?:member|subscriber|beneficiary|health\s+plan)"
    },
}


def labelled_number_valid(value: str) -> bool:
    """A labelled identifier holds 5 to 20 digits (so "MRN pending" or "member ID for the claim" are not)."""
    return 5 <= sum(ch.isdigit() for ch in value) <= 20


def phi_recognizers(language: str = "en") -> list[Any]:
    presidio = require("presidio_analyzer", extra="pii", feature="PII/PHI detection")
    pattern_recognizer: Any = presidio.PatternRecognizer
    pattern: Any = presidio.Pattern

    class NpiRecognizer(pattern_recognizer):  # type: ignore[misc]
        def validate_result(self, pattern_text: str) -> bool | None:
            return None if npi_valid(pattern_text) else False  # valid keeps the pattern score

    class LabelledNumberRecognizer(pattern_recognizer):  # type: ignore[misc]
        def validate_result(self, pattern_text: str) -> bool | None:
            return None if labelled_number_valid(pattern_text) else False

    class DeaRecognizer(pattern_recognizer):  # type: ignore[misc]
        def validate_result(self, pattern_text: str) -> bool | None:
            return dea_valid(pattern_text.upper())

    recognizers = [
        LabelledNumberRecognizer(
            supported_entity="MEDICAL_RECORD_NUMBER",
            name="MedicalRecordNumberRecognizer",
            supported_language=language,
            global_regex_flags=CASE_SENSITIVE,
            patterns=[
                pattern("mrn_prefixed", line_local(rf"(?i)(?<={_MRN_LABEL}){LABELLED_NUMBER}"), 0.85),
                pattern("mrn_number", r"\b[A-Z]{0,3}\d{6,10}\b", 0.15),
            ],
            context=["mrn", "medical record", "record number", "chart", "patient id", "patient number"],
        ),
        NpiRecognizer(
            supported_entity="US_NPI",
            name="UsNpiRecognizer",
            supported_language=language,
            global_regex_flags=CASE_SENSITIVE,
            patterns=[pattern("npi", r"\b[12]\d{9}\b", 0.4)],
            context=["npi", "provider", "national provider", "prescriber", "physician"],
        ),
        DeaRecognizer(
            supported_entity="DEA_NUMBER",
            name="DeaNumberRecognizer",
            supported_language=language,
            global_regex_flags=CASE_SENSITIVE,
            patterns=[pattern("dea", r"\b[ABCDEFGHJKLMPRSTUX][A-Z9]\d{7}\b", 0.5)],
            context=["dea", "registration", "prescriber", "controlled"],
        ),
        LabelledNumberRecognizer(
            supported_entity="HEALTH_PLAN_ID",
            name="HealthPlanMemberIdRecognizer",
            supported_language=language,
            global_regex_flags=CASE_SENSITIVE,
            patterns=[
                pattern(
                    "member_id_labelled", line_local(rf"(?i)(?<={_MEMBER_LABEL}){LABELLED_NUMBER}"), 0.85
                ),
                pattern("member_id", r"\b[A-Z]{1,4}[\- ]?\d{6,12}\b|\b\d{9,12}[A-Z]{0,2}\b", 0.2),
            ],
            context=[
                "member",
                "member id",
                "subscriber",
                "health plan",
                "insurance",
                "policy",
                "beneficiary",
            ],
        ),
        pattern_recognizer(
            supported_entity="ICD10_CODE",
            name="Icd10Recognizer",
            supported_language=language,
            global_regex_flags=CASE_SENSITIVE,
            patterns=[pattern("icd10", r"\b[A-TV-Z]\d[0-9AB](?:\.[0-9A-TV-Z]{1,4})?\b", 0.15)],
            # "diagnoses": its spaCy lemma is "diagnosis", the lower-cased word does not contain it
            context=[
                "icd",
                "icd-10",
                "icd10",
                "diagnosis",
                "diagnoses",
                "diagnosed",
                "dx",
                "code",
                "condition",
            ],
        ),
    ]
    for recognizer in recognizers:
        gate_patterns(recognizer, PHI_GATES.get(recognizer.name, {}))
    return recognizers
