"""Presidio's PhoneRecognizer with a cheaper phonenumbers matcher: same regions, leniency and results.

``PhoneNumberMatcher`` parses every digit group of the text once per region ("46", "501", "2020"...), and the
parsing is most of the recognizer's time. A number valid for a region has a national significant number at
least as long as that region's shortest possible length, or, written internationally, a country code plus the
shortest length of any region; each of those digits (or letters, for vanity numbers) is a letter or digit of
the candidate. Candidates with fewer letters and digits than that cannot match at leniency VALID or stricter
and are skipped before parsing (inner matches are substrings, so they cannot match either; each inner match
tried is held to the same bounds before it is parsed).

A candidate written nationally (no plus sign, and no group of it starting with the region's international
dialling prefix, e.g. ``00`` or ``011``) is parsed with the region's own country code, so its number is valid
only if it is as long as the shortest number of a region sharing that code: US and CA 7 (one NANP region has
7-digit numbers), GB 7, FR 9, IL 7, IN 8, BR 8, DE 4. Only a candidate that could be international keeps the
lower international bound. On 20 kB of benign prompts and documents this skips most digit groups of 5 to 8
digits (dates, amounts, ids) before any parse, for every region but DE.
"""

from __future__ import annotations

import re
import unicodedata
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


@lru_cache(maxsize=64)
def min_national_chars(region: str) -> int:
    """Fewest letters and digits a candidate written nationally (no plus sign, no international prefix) needs
    to hold a number valid for ``region``: the shortest possible national number of any region sharing its
    country code (parsing may credit the number to any of them), at least :func:`min_candidate_chars`."""
    phonenumbers = require("phonenumbers", extra="pii", feature=FEATURE)
    meta = phonenumbers.PhoneMetadata.metadata_for_region(region)
    if meta is None:
        return min_candidate_chars(region)
    shortest = []
    for other in phonenumbers.COUNTRY_CODE_TO_REGION_CODE.get(meta.country_code, (region,)):
        desc = phonenumbers.PhoneMetadata.metadata_for_region(other)
        lengths = [n for n in (desc.general_desc.possible_length or ()) if n > 0] if desc else []
        shortest.append(min(lengths, default=1))
    return max(min(shortest, default=1), min_candidate_chars(region))


@lru_cache(maxsize=64)
def _international_prefix(region: str) -> re.Pattern[str] | None:
    phonenumbers = require("phonenumbers", extra="pii", feature=FEATURE)
    meta = phonenumbers.PhoneMetadata.metadata_for_region(region)
    prefix = meta.international_prefix if meta else None
    return re.compile(prefix) if prefix else None


_PLUS = frozenset("+\uff0b")


def may_be_international(candidate: str, region: str) -> bool:
    """Whether ``candidate`` (or a group of it an inner match could start with: the text after any character
    that is not a letter or digit) could be read as an international number: it holds a plus sign, or the
    digits of such a group start with the region's international dialling prefix. A region without one: True."""
    if any(c in _PLUS for c in candidate):
        return True
    prefix = _international_prefix(region)
    if prefix is None:
        return True
    digits = [str(unicodedata.decimal(c)) if c.isdecimal() else "" for c in candidate]
    starts = (
        i for i, c in enumerate(candidate) if c.isdecimal() and (i == 0 or not candidate[i - 1].isalnum())
    )
    return any(prefix.match("".join(digits[i:])) for i in starts)


@lru_cache(maxsize=1)
def _recognizer_class() -> Any:
    phonenumbers = require("phonenumbers", extra="pii", feature=FEATURE)
    matcher_mod = require("phonenumbers.phonenumbermatcher", extra="pii", feature=FEATURE)
    presidio = require("presidio_analyzer", extra="pii", feature=FEATURE)
    predefined = require("presidio_analyzer.predefined_recognizers", extra="pii", feature=FEATURE)
    valid = int(matcher_mod.Leniency.VALID)
    base_matcher: Any = matcher_mod.PhoneNumberMatcher
    base_recognizer: Any = predefined.PhoneRecognizer

    candidate_pattern = matcher_mod._PATTERN
    second_number_start = matcher_mod._SECOND_NUMBER_START_PATTERN

    class ShortCandidateSkippingMatcher(base_matcher):  # type: ignore[misc]
        def __init__(
            self, text: str, region: str, leniency: int, candidates: dict[int, tuple[int, str] | None]
        ) -> None:
            super().__init__(text, region, leniency=leniency)
            self._region = region
            self._min_chars = min_candidate_chars(region) if leniency >= valid else 0
            self._min_national = min_national_chars(region) if leniency >= valid else 0
            self._candidates = candidates

        def _next_candidate(self, index: int) -> tuple[int, str] | None:
            """The next candidate at or after ``index``: start and text, trimmed before a second number. The
            same for every region, so the regions' matchers of one text share the table."""
            if index not in self._candidates:
                found = candidate_pattern.search(self.text, index)
                self._candidates[index] = (
                    None
                    if found is None
                    else (
                        found.start(),
                        self._trim_after_first_match(second_number_start, found.group()),
                    )
                )
            return self._candidates[index]

        def _find(self, index: int) -> Any:
            # phonenumbers' PhoneNumberMatcher._find (9.0), with the pattern search read from the shared table
            found = self._next_candidate(index)
            while self._max_tries > 0 and found is not None:
                start, candidate = found
                if len(candidate) >= self._min_candidate_length:
                    match = self._extract_match(candidate, start)
                    if match is not None:
                        return match
                    self._max_tries -= 1
                index = start + len(candidate)
                found = self._next_candidate(index)
            return None

        def _too_short(self, candidate: str) -> bool:
            chars = sum(c.isalnum() for c in candidate)
            if chars < self._min_chars:
                return True
            return chars < self._min_national and not may_be_international(candidate, self._region)

        def _extract_match(self, candidate: str, offset: int) -> Any:
            if self._too_short(candidate):  # nor can any inner match, a part of it
                return None
            return super()._extract_match(candidate, offset)

        def _parse_and_verify(self, candidate: str, offset: int) -> Any:
            # every parse, also of the inner matches tried when the whole candidate is no number
            if self._too_short(candidate):
                return None
            return super()._parse_and_verify(candidate, offset)

    class PrefilteredPhoneRecognizer(base_recognizer):  # type: ignore[misc]
        def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None) -> list[Any]:
            # PhoneRecognizer.analyze with the matcher above.
            results = []
            candidates: dict[int, tuple[int, str] | None] = {}
            for region in self.supported_regions:
                for match in ShortCandidateSkippingMatcher(text, region, self.leniency, candidates):
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
