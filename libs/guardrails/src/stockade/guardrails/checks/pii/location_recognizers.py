"""Street addresses and international phone numbers, which the small spaCy model mostly misses.

Addresses: house number + street name + street-type word (English and common European forms), military
(PSC/Unit ... Box ... APO/FPO/DPO) addresses, and the text after an address cue ("address is", "live at").
"""

from __future__ import annotations

import re
from typing import Any

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
    # the street word is bounded (40 characters before its suffix): unbounded, "1-1-1-..." took quadratic time
    ("eu_suffix", rf"(?i)\b(?:\d{{1,6}}\s+)?[\w\-]{{0,40}}(?:{_EU_SUFFIX})\s+\d{{1,5}}[a-z]?\b{_UNIT}", 0.55),
    (
        "military",
        r"\b(?:PSC|Unit|USNS|USNV|USS|USCGC)\s+\d{3,5},?\s+Box\s+\d{3,5}(?:\s+[AFD]PO\s+A[AEP]\s+\d{5})?",
        0.7,
    ),
    ("unit", r"\b(?:Apt\.|Suite|Unit)\s+\d{1,5}\b", 0.4),
    # "727 Gesterbyntie 68", "4923 Parmova 109 Suite 380", then up to three continuation lines (city, country)
    (
        "number_name_number",
        r"\b\d{1,6}(?:\s\d{1,4})?\s+\p{Lu}[\p{L}'.\-]*(?:\s+\p{L}[\p{L}'.\-]*){0,3}\s+\d{1,5}[a-z]?\b"
        rf"{_UNIT}{_UNIT}(?:[ \t]*\n[ \t]*,?[ \t]*[\p{{L}}\d][^\n.?!]{{0,40}}){{0,3}}",
        0.5,
    ),
    ("caps_place", r"(?<=\b(?:in|from|at|to|near|of)\s)\p{Lu}{3,}(?:[\s\-]\p{Lu}{2,})*\b", 0.4),
    (
        "cue",
        r"(?i:(?<=(?:address\s+(?:is|was|:)|\blive[sd]?\s+(?:at|in)|located\s+at|reside[sd]?\s+at|"
        r"ship(?:ped)?\s+to|deliver(?:ed)?\s+to|moved\s+to|send\s+it\s+to)\s+))"
        r"(?:[^\n.?!;]|\.(?=\S)|\n(?=\s*[\w,]))+",
        0.45,
    ),
]

PHONE_PATTERN = (
    r"(?<![\w+])(?:\+\d{1,3}[\s.\-]?(?:\(0\)\s?)?|00\d{1,3}[\s.\-]?|\(\d{2,4}\)\s?)?"
    r"\d{2,4}(?:[\s.\-]\d{2,4}){1,4}(?:\s?(?:x|ext\.?)\s?\d{1,5})?(?![\w\-])"
)


COUNTRIES = [
    "Afghanistan",
    "Albania",
    "Algeria",
    "Andorra",
    "Angola",
    "Argentina",
    "Armenia",
    "Australia",
    "Austria",
    "Azerbaijan",
    "Bahamas",
    "Bahrain",
    "Bangladesh",
    "Barbados",
    "Belarus",
    "Belgium",
    "Belize",
    "Benin",
    "Bhutan",
    "Bolivia",
    "Botswana",
    "Brazil",
    "Brunei",
    "Bulgaria",
    "Burundi",
    "Cambodia",
    "Cameroon",
    "Canada",
    "Chad",
    "Chile",
    "China",
    "Colombia",
    "Congo",
    "Croatia",
    "Cuba",
    "Cyprus",
    "Czechia",
    "Denmark",
    "Djibouti",
    "Dominica",
    "Ecuador",
    "Egypt",
    "Eritrea",
    "Estonia",
    "Eswatini",
    "Ethiopia",
    "Fiji",
    "Finland",
    "France",
    "Gabon",
    "Gambia",
    "Georgia",
    "Germany",
    "Ghana",
    "Greece",
    "Greenland",
    "Grenada",
    "Guatemala",
    "Guinea",
    "Guyana",
    "Haiti",
    "Honduras",
    "Hungary",
    "Iceland",
    "India",
    "Indonesia",
    "Iran",
    "Iraq",
    "Ireland",
    "Israel",
    "Italy",
    "Jamaica",
    "Japan",
    "Jordan",
    "Kazakhstan",
    "Kenya",
    "Kiribati",
    "Kosovo",
    "Kuwait",
    "Kyrgyzstan",
    "Laos",
    "Latvia",
    "Lebanon",
    "Lesotho",
    "Liberia",
    "Libya",
    "Liechtenstein",
    "Lithuania",
    "Luxembourg",
    "Madagascar",
    "Malawi",
    "Malaysia",
    "Maldives",
    "Mali",
    "Malta",
    "Mauritania",
    "Mauritius",
    "Mexico",
    "Micronesia",
    "Moldova",
    "Monaco",
    "Mongolia",
    "Montenegro",
    "Morocco",
    "Mozambique",
    "Myanmar",
    "Namibia",
    "Nauru",
    "Nepal",
    "Netherlands",
    "Nicaragua",
    "Niger",
    "Nigeria",
    "Norway",
    "Oman",
    "Pakistan",
    "Palau",
    "Panama",
    "Paraguay",
    "Peru",
    "Philippines",
    "Poland",
    "Portugal",
    "Qatar",
    "Romania",
    "Russia",
    "Rwanda",
    "Samoa",
    "Senegal",
    "Serbia",
    "Seychelles",
    "Singapore",
    "Slovakia",
    "Slovenia",
    "Somalia",
    "Spain",
    "Sudan",
    "Suriname",
    "Sweden",
    "Switzerland",
    "Syria",
    "Taiwan",
    "Tajikistan",
    "Tanzania",
    "Thailand",
    "Togo",
    "Tonga",
    "Tunisia",
    "Turkey",
    "Turkmenistan",
    "Tuvalu",
    "Uganda",
    "Ukraine",
    "Uruguay",
    "Uzbekistan",
    "Vanuatu",
    "Venezuela",
    "Vietnam",
    "Yemen",
    "Zambia",
    "Zimbabwe",
    "United States",
    "United Kingdom",
    "Czech Republic",
    "New Zealand",
    "South Africa",
    "South Korea",
    "North Korea",
    "Saudi Arabia",
    "Sri Lanka",
    "Costa Rica",
    "El Salvador",
    "Puerto Rico",
    "Hong Kong",
    "Bosnia and Herzegovina",
    "North Macedonia",
    "Dominican Republic",
    "Papua New Guinea",
    "Ivory Coast",
    "United Arab Emirates",
    "Trinidad and Tobago",
    "Faroe Islands",
    "Isle of Man",
]


def location_recognizers(language: str = "en") -> list[Any]:
    presidio = require("presidio_analyzer", extra="pii", feature="PII/PHI detection")
    pattern_recognizer: Any = presidio.PatternRecognizer
    pattern: Any = presidio.Pattern
    return [
        pattern_recognizer(
            supported_entity="LOCATION",
            name="StreetAddressRecognizer",
            supported_language=language,
            global_regex_flags=CASE_SENSITIVE,
            patterns=[pattern(name, regex, score) for name, regex, score in ADDRESS_PATTERNS],
            context=["address", "street", "live", "located", "ship", "deliver", "office"],
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
            patterns=[pattern("phone", PHONE_PATTERN, 0.3)],
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
