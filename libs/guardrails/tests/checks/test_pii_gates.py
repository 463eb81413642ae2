"""The gates of the slow PII patterns are necessary conditions: wherever a gated pattern matches, its gate
matches, so gating changes no result. Checked on generated text built from the patterns' own words (labels,
cues, street suffixes, titles, numbers, names) and on each recognizer's results with and without its gates."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

pytest.importorskip("presidio_analyzer", reason="needs the 'pii' extra")
regex = pytest.importorskip("regex")

from stockade.guardrails.checks.pii.gates import GatedRegex, gate_patterns  # noqa: E402
from stockade.guardrails.checks.pii.location_recognizers import location_recognizers  # noqa: E402
from stockade.guardrails.checks.pii.person_recognizers import person_recognizers  # noqa: E402
from stockade.guardrails.checks.pii.phi_recognizers import phi_recognizers  # noqa: E402

WORDS = [
    "MRN", "MR#", "mrn", "medical record number", "Medical  Record no.", "member", "Member ID", "subscriber no.",
    "health plan number", "beneficiary #", "is", ":", "#", "-", "A1234567", "12-345", "00482913", "W1234 5678",
    "address is", "lives at", "located at", "ship to", "deliver to", "send it to", "moved to", "live in",
    "Hauptstrasse", "Ringvej", "Storgatan", "Mannerheimintie", "Kalkweg", "Main St.", "during", "string",
    "12", "4", "68", "7b", "Apt. 5", "Mr.", "Mrs", "Dr", "Prof", "Madam", "John", "Smith", "Maria", "OSLO",
    "in", "from", "the", "and", ".", ",", "\n", "  ", " ",
]  # fmt: skip


def generated(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 14))) for _ in range(n)]


def gated_recognizers() -> list[Any]:
    return [
        r
        for r in [*location_recognizers("en"), *phi_recognizers("en"), *person_recognizers("en")]
        if any(isinstance(p.compiled_regex, GatedRegex) for p in r.patterns)
    ]


def test_every_gate_is_a_necessary_condition_of_its_pattern() -> None:
    texts = generated(6000, seed=11)
    matched: dict[str, int] = {}
    for recognizer in gated_recognizers():
        for pattern in recognizer.patterns:
            gated = pattern.compiled_regex
            if not isinstance(gated, GatedRegex):
                continue
            for text in texts:
                if gated.compiled.search(text) is not None:
                    assert gated.gate.search(text) is not None, (pattern.name, text)
                    matched[pattern.name] = matched.get(pattern.name, 0) + 1
    # each gated pattern matched often enough for the check to mean something
    expected = {"eu_suffix", "cue", "place_cue", "mrn_prefixed", "member_id_labelled", "titled"}
    assert set(matched) == expected and min(matched.values()) >= 20, matched


def test_gated_recognizers_give_the_ungated_results() -> None:
    texts = generated(1500, seed=12)
    for recognizer in gated_recognizers():
        plain = copy.deepcopy(recognizer)
        for pattern in plain.patterns:
            pattern.compiled_regex = None  # Presidio compiles it again, ungated
        for text in texts:
            ours = [
                (r.start, r.end, r.score) for r in recognizer.analyze(text, recognizer.supported_entities)
            ]
            theirs = [(r.start, r.end, r.score) for r in plain.analyze(text, plain.supported_entities)]
            assert ours == theirs, (recognizer.name, text)


def test_a_gate_naming_no_pattern_is_refused() -> None:
    [recognizer] = person_recognizers("en")
    with pytest.raises(ValueError, match="no pattern named"):
        gate_patterns(recognizer, {"titld": "Mr"})
