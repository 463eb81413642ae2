"""PHI recognizers Presidio lacks: medical record numbers, US NPI, DEA numbers, health-plan member IDs and
ICD-10 codes. Context-dependent ones score low alone and pass the threshold only next to their context words
(Presidio's context enhancer adds 0.35)."""

from __future__ import annotations

import re
from typing import Any

from stockade.guardrails.checks.pii.phi_checksums import dea_valid, npi_valid
from stockade.guardrails.extras import require

# Presidio's default flags include IGNORECASE; these patterns rely on letter case.
CASE_SENSITIVE = re.DOTALL | re.MULTILINE


def phi_recognizers(language: str = "en") -> list[Any]:
    presidio = require("presidio_analyzer", extra="pii", feature="PII/PHI detection")
    pattern_recognizer: Any = presidio.PatternRecognizer
    pattern: Any = presidio.Pattern

    class NpiRecognizer(pattern_recognizer):  # type: ignore[misc]
        def validate_result(self, pattern_text: str) -> bool | None:
            return None if npi_valid(pattern_text) else False  # valid keeps the pattern score

    class DeaRecognizer(pattern_recognizer):  # type: ignore[misc]
        def validate_result(self, pattern_text: str) -> bool | None:
            return dea_valid(pattern_text.upper())

    return [
        pattern_recognizer(
            supported_entity="MEDICAL_RECORD_NUMBER",
            name="MedicalRecordNumberRecognizer",
            supported_language=language,
            global_regex_flags=CASE_SENSITIVE,
            patterns=[
                pattern("mrn_prefixed", r"(?i)(?<=\bMRN[\s:#\-]{0,3})[A-Z]{0,3}\d{5,10}\b", 0.85),
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
        pattern_recognizer(
            supported_entity="HEALTH_PLAN_ID",
            name="HealthPlanMemberIdRecognizer",
            supported_language=language,
            global_regex_flags=CASE_SENSITIVE,
            patterns=[pattern("member_id", r"\b[A-Z]{1,4}[\- ]?\d{6,12}\b|\b\d{9,12}[A-Z]{0,2}\b", 0.2)],
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
