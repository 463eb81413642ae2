"""Presidio's PhoneRecognizer with a cheaper phonenumbers matcher: same regions, leniency and results.

``PhoneNumberMatcher`` parses every digit group of the text once per region ("46", "501", "2020"...), and the
parsing is most of the recognizer's time. A number valid for a region has a national significant number at
least as long as that region's shortest possible length, or, written internationally, a country code plus the
shortest length of any region; each of those digits (or letters, for vanity numbers) is a letter or digit of
the candidate. Candidates with fewer letters and digits than that cannot match at leniency VALID or stricter
and are skipped before parsing (inner matches are substrings, so they cannot match either).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from stockade.guardrails.extras import require

FEATURE = "PII/PHI detection"


def phone_recognizer(language: str = "en") -> Any:
    """A drop-in for Presidio's ``PhoneRecognizer`` (same name, context, regions, leniency and results)."""
    return _recognizer_class()(supported_language=language, name="PhoneRecognizer")


@lru_cache(maxsize=1)
def _global_min_length() -> int:
    """Shortest possible national number of any region (1 when some region lists none)."""
    phonenumbers = require("phonenumbers", extra="pii", feature=FEATURE)
    meta = phonenumbers.PhoneMetadata
    descs = [meta.metadata_for_region(r) for r in phonenumbers.SUPPORTED_REGIONS]
    descs += [meta.metadata_for_nongeo_region(c) for c in phonenumbers.COUNTRY_CODES_FOR_NON_GEO_REGIONS]
    lengths = [
        min((n for n in (m.general_desc.possible_length or ()) if n > 0), default=1) for m in descs if m
    ]
    return min(lengths, default=1)


@lru_cache(maxsize=64)
def min_candidate_chars(region: str) -> int:
    """Fewest letters and digits a candidate needs to hold a number valid for ``region`` (national form, or
    international: at least one country-code digit plus the shortest national number of any region)."""
    phonenumbers = require("phonenumbers", extra="pii", feature=FEATURE)
    meta = phonenumbers.PhoneMetadata.metadata_for_region(region)
    lengths = [n for n in (meta.general_desc.possible_length or ()) if n > 0] if meta else []
    national = min(lengths, default=1)
    return min(national, 1 + _global_min_length())


@lru_cache(maxsize=1)
def _recognizer_class() -> Any:
    phonenumbers = require("phonenumbers", extra="pii", feature=FEATURE)
    matcher_mod = require("phonenumbers.phonenumbermatcher", extra="pii", feature=FEATURE)
    presidio = require("presidio_analyzer", extra="pii", feature=FEATURE)
    predefined = require("presidio_analyzer.predefined_recognizers", extra="pii", feature=FEATURE)
    valid = int(matcher_mod.Leniency.VALID)
    base_matcher: Any = matcher_mod.PhoneNumberMatcher
    base_recognizer: Any = predefined.PhoneRecognizer

    class ShortCandidateSkippingMatcher(base_matcher):  # type: ignore[misc]
        def __init__(self, text: str, region: str, leniency: int) -> None:
            super().__init__(text, region, leniency=leniency)
            self._min_chars = min_candidate_chars(region) if leniency >= valid else 0

        def _extract_match(self, candidate: str, offset: int) -> Any:
            if sum(c.isalnum() for c in candidate) < self._min_chars:
                return None
            return super()._extract_match(candidate, offset)

    class PrefilteredPhoneRecognizer(base_recognizer):  # type: ignore[misc]
        def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None) -> list[Any]:
            # PhoneRecognizer.analyze with the matcher above.
            results = []
            for region in self.supported_regions:
                for match in ShortCandidateSkippingMatcher(text, region, self.leniency):
                    try:
                        found = phonenumbers.region_code_for_number(
                            phonenumbers.parse(text[match.start : match.end])
                        )
                    except phonenumbers.NumberParseException:
                        found = region
                    results.append(self._get_recognizer_result(match, text, found, nlp_artifacts))
            deduped: list[Any] = presidio.EntityRecognizer.remove_duplicates(results)
            return deduped

    return PrefilteredPhoneRecognizer
