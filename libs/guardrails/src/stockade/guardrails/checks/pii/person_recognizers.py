"""Person names the small spaCy model misses: capitalised two-to-four-word names (low score) and names after
explicit cues ("my name is", "maiden name is", "Dr.")."""

from __future__ import annotations

import re
from typing import Any

from stockade.guardrails.checks.pii.gates import gate_patterns
from stockade.guardrails.checks.pii.postfilter import line_local
from stockade.guardrails.extras import require

# Presidio's default flags include IGNORECASE; these patterns rely on letter case.
CASE_SENSITIVE = re.DOTALL | re.MULTILINE

_NAME = r"\p{Lu}[\p{Ll}'\-]+"
# Capitalised words that start sentences or greetings, not names.
_NOT_NAME = (
    r"(?!(?:The|This|That|These|Those|Please|Contact|Dear|Hello|Hi|Hey|Call|Email|Send|Ask|Tell|Meet|Thanks|"
    r"Thank|Our|Your|My|His|Her|Their|When|Where|What|Who|How|Why|If|And|But|In|On|At|For|From|To|With|By|"
    r"About|Is|Are|Was|Can|Could|Would|Should|Will|Do|Does|Did|Have|Has|Mr|Mrs|Ms|Dr)\b)"
)
PERSON_PATTERNS = [
    ("full_name", rf"\b{_NOT_NAME}{_NAME}(?:\s\p{{Lu}}\.?)?(?:\s{_NAME}){{1,2}}\b", 0.35),
    ("titled", rf"(?<=\b(?:Mr|Mrs|Ms|Miss|Dr|Prof|Sir|Madam)\.?\s){_NAME}(?:\s{_NAME}){{0,2}}\b", 0.6),
    (
        "cued",
        r"(?i:(?<=(?:my name is|maiden name is|last name is|first name is|surname is|i am|i'm|name:|"
        r"called|named|signed|directed by:?|written by|by)\s+))"
        rf"(?-i:{_NAME}(?:\s(?:\p{{Lu}}\.?\s)?{_NAME}){{0,2}})\b",
        0.5,
    ),
]


# Necessary condition of the lookbehind-led "titled" pattern (gates.py): a title.
PERSON_GATES = {"titled": r"(?:Mr|Ms|Miss|Dr|Prof|Sir|Madam)"}


def person_recognizers(language: str = "en") -> list[Any]:
    presidio = require("presidio_analyzer", extra="pii", feature="PII/PHI detection")
    return [
        gate_patterns(
            presidio.PatternRecognizer(
                supported_entity="PERSON",
                name="PersonNamePatternRecognizer",
                supported_language=language,
                global_regex_flags=CASE_SENSITIVE,
                patterns=[
                    presidio.Pattern(name, line_local(rx), score) for name, rx, score in PERSON_PATTERNS
                ],
                context=["name", "mr", "mrs", "ms", "dr", "called", "contact", "speaker", "ceo"],
            ),
            PERSON_GATES,
        )
    ]
