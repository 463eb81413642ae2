"""Street addresses, place names and international phone numbers, which the small spaCy model mostly misses.

STREET_ADDRESS (masked by default): house number + street name + street-type word (English and common European
forms), military (PSC/Unit ... Box ... APO/FPO/DPO) addresses, and the text after an address cue ("address is",
"live at") when it starts with a number or a capital. LOCATION (masked only when configured, like spaCy's
places): country names, capitalised place names after "in", "from"..., and the place after "live in",
"moved to".
"""

from __future__ import annotations

import re
from typing import Any

from stockade.guardrails.checks.pii.gates import gate_patterns
from stockade.guardrails.checks.pii.postfilter import line_local
from stockade.guardrails.checks.pii.wordlists import COUNTRIES
from stockade.guardrails.extras import require

# Presidio's default flags include IGNORECASE; these patterns rely on letter case.
CASE_SENSITIVE = re.DOTALL | re.MULTILINE

_STREET_TYPES = (
    r"Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Way|Place|Pl|Square|Sq|Terrace|"
    r"Parkway|Pkwy|Highway|Hwy|Crescent|Close|Row|Walk|Hill|Park|Gardens|Grove|Mews|Trail|Circle|Cir"
)
_EU_PREFIX = (
    r"Rua|Rue|Via|Viale|Calle|Avenida|Avenue|Av\.|Piazza|Plaza|Praça|Chemin|Boulevard|Ulica|ul\.|Str\."
)
_EU_SUFFIX = (
    r"strasse|straße|str\.|gatan|gata|vägen|väg|katu|tie|vej|gade|weg|laan|straat|plein|allee|gasse|platz|"
    r"ring|utca|ulica|veien|gränd|torget|kuja"
)
_MONTHS = (
    r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec|January|February|March|April|June|July|August|"
    r"September|October|November|December)"
)
_FUNCTION_WORDS = (
    r"(?:about|above|after|ago|and|are|as|at|before|but|by|for|from|had|has|have|in|into|is|more|of|on|or|"
    r"over|per|than|that|the|then|to|under|was|were|when|which|with)"
)
_UNIT = r"(?:,?\s*(?:Apt\.?|Apartment|Suite|Ste\.?|Unit|Flat|#)\s*\w{1,6})?"

ADDRESS_PATTERNS = [
    (
        "us_street",
        rf"\b\d{{1,6}}[A-Za-z]?\s+(?:[A-Z][\w'.\-]*\s+){{1,4}}(?:{_STREET_TYPES})\b\.?{_UNIT}",
        0.6,
    ),
    (
        "eu_prefix",
        rf"\b(?:\d{{1,6}}\s+)?(?:{_EU_PREFIX})\s+(?:[\w'.\-]+\s+){{0,5}}?\d{{1,5}}[a-zA-Z]?\b{_UNIT}",
        0.55,
    ),
    # "39 Rue Ibn El-Jazzar", "12 Via Roma": house number first, street to the end of the line
    (
        "eu_prefix_numbered",
        rf"\b\d{{1,6}},?\s+(?:{_EU_PREFIX})\s+[\p{{L}}'.\-]+(?:\s+[\p{{L}}'.\-]+){{0,4}}",
        0.5,
    ),
    # the street word is bounded (40 characters before its suffix): unbounded, "1-1-1-..." took quadratic time
    ("eu_suffix", rf"(?i)\b(?:\d{{1,6}}\s+)?[\w\-]{{0,40}}(?:{_EU_SUFFIX})\s+\d{{1,5}}[a-z]?\b{_UNIT}", 0.55),
    (
        "military",
        r"\b(?:PSC|Unit|USNS|USNV|USS|USCGC)\s+\d{3,5},?\s+Box\s+\d{3,5}(?:\s+[AFD]PO\s+A[AEP]\s+\d{5})?",
        0.7,
    ),
    ("unit", r"\b(?:Apt\.|Suite|Unit)\s+\d{1,5}\b", 0.5),
    # "727 Gesterbyntie 68", "4923 Parmova 109 Suite 380"; not a date ("4096 Nov 24", "12 March 2024") nor
    # table columns ("1/1     Running     0": words of an address are one or two spaces apart), nor prose
    # ("14:32 UTC about 4%", "1850 Britain had more than 9,000")
    (
        "number_name_number",
        rf"\b\d{{1,6}}(?:\s\d{{1,4}})?\s{{1,2}}(?!{_MONTHS}\b|\p{{Lu}}{{2,}}\b)"
        rf"\p{{Lu}}[\p{{L}}'.\-]*(?:\s{{1,2}}(?!{_FUNCTION_WORDS}\b)\p{{L}}[\p{{L}}'.\-]*){{0,3}}\s{{1,2}}\d{{1,5}}[a-z]?\b"
        rf"{_UNIT}{_UNIT}",
        0.5,
    ),
    (
        "cue",
        r"(?i:(?<=(?:address\s+(?:is|was|:)|\blive[sd]?\s+at|located\s+at|reside[sd]?\s+at|"
        r"ship(?:ped)?\s+to|deliver(?:ed)?\s+to|send\s+it\s+to)\s+))"
        r"(?=[\p{Lu}\d])(?:[^\n.?!;]|\.(?=\S))+",
        0.45,
    ),
]

PLACE_PATTERNS = [
    ("caps_place", r"(?<=\b(?:in|from|at|to|near|of)\s)\p{Lu}{3,}(?:[\s\-]\p{Lu}{2,})*\b", 0.4),
    ("place_cue", r"(?i:(?<=(?:\blive[sd]?\s+in|moved\s+to)\s+))(?:[^\n.?!;]|\.(?=\S))+", 0.45),
]

_ADDRESS_CONTEXT = ["address", "street", "live", "located", "ship", "deliver", "office"]

PHONE_PATTERN = (
    r"(?<![\w+])(?:\+\d{1,3}[\s.\-]?(?:\(0\)\s?)?|00\d{1,3}[\s.\-]?|\(\d{2,4}\)\s?)?"
    r"\d{2,4}(?:[\s.\-]\d{2,4}){1,4}(?:\s?(?:x|ext\.?)\s?\d{1,5})?(?![\w\-])"
)


# Necessary conditions of the slow patterns (gates.py): a text without a match of the gate has no match.
ADDRESS_GATES = {
    "eu_suffix": rf"(?i)(?:{_EU_SUFFIX})\s+\d",  # the suffix, whitespace and the house number
    "cue": r"(?i)(?:address|live|located|reside|ship|deliver|send)",  # a word of the lookbehind
}
PLACE_GATES = {"place_cue": r"(?i)(?:live|moved)"}


def location_recognizers(language: str = "en") -> list[Any]:
    presidio = require("presidio_analyzer", extra="pii", feature="PII/PHI detection")
    pattern_recognizer: Any = presidio.PatternRecognizer
    pattern: Any = presidio.Pattern
    return [
        gate_patterns(
            pattern_recognizer(
                supported_entity="STREET_ADDRESS",
                name="StreetAddressRecognizer",
                supported_language=language,
                global_regex_flags=CASE_SENSITIVE,
                patterns=[pattern(name, line_local(regex), score) for name, regex, score in ADDRESS_PATTERNS],
                context=_ADDRESS_CONTEXT,
            ),
            ADDRESS_GATES,
        ),
        gate_patterns(
            pattern_recognizer(
                supported_entity="LOCATION",
                name="PlaceNameRecognizer",
                supported_language=language,
                global_regex_flags=CASE_SENSITIVE,
                patterns=[pattern(name, line_local(regex), score) for name, regex, score in PLACE_PATTERNS],
                context=_ADDRESS_CONTEXT,
            ),
            PLACE_GATES,
        ),
        pattern_recognizer(
            supported_entity="LOCATION",
            name="CountryNameRecognizer",
            supported_language=language,
            global_regex_flags=CASE_SENSITIVE,
            deny_list=COUNTRIES,
            deny_list_score=0.6,
        ),
        pattern_recognizer(
            supported_entity="PHONE_NUMBER",
            name="InternationalPhoneRecognizer",
            supported_language=language,
            global_regex_flags=CASE_SENSITIVE,
            patterns=[pattern("phone", line_local(PHONE_PATTERN), 0.3)],
            context=[
                "phone",
                "call",
                "tel",
                "telephone",
                "mobile",
                "cell",
                "number",
                "fax",
                "reach",
                "contact",
            ],
        ),
    ]
