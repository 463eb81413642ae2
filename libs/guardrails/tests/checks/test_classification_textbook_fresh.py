"""A second, held-out set of textbook attacks and ordinary requests (fixtures/classification/textbook_fresh.json),
written without looking at the training data, its generators or the first fixture, to measure a retrained model
on texts it cannot have been tuned on.

The same seven kinds as textbook.json, with more of each, at least fourteen attacks in other languages and at least
fourteen ordinary requests in other languages. The tests here check only its shape and that no text is copied from
the training data or from the first fixture; how many the defaults block is measured after a retrain.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from itertools import combinations
from pathlib import Path

from .test_classification_textbook import ATTACKS as FIRST_ATTACKS
from .test_classification_textbook import BENIGN as FIRST_BENIGN
from .test_classification_textbook import _shingles, copied, copied_from_training_data

FIXTURE = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "classification" / "textbook_fresh.json").read_text(
        encoding="utf-8"
    )
)
ATTACKS: list[dict[str, str]] = FIXTURE["attacks"]
BENIGN: list[str] = FIXTURE["benign"]
KINDS = {"override", "extraction", "persona", "devmode", "encoding", "languages", "indirect"}
TEXTS = [a["text"] for a in ATTACKS] + BENIGN


# Common English words that none of the fixture's other languages uses as a word of its own.
ENGLISH = {"the", "and", "to", "you", "your", "my", "is", "of", "how", "what", "please", "for", "it", "this"}


def _english(text: str) -> bool:
    return bool(set(re.findall(r"[a-z]+", text.lower())) & ENGLISH)


def test_the_fresh_fixture_has_the_shape_asked_for() -> None:
    assert set(FIXTURE) == {"attacks", "benign"}
    kinds = Counter(a["kind"] for a in ATTACKS)
    assert set(kinds) == KINDS
    assert all(set(a) == {"kind", "text"} for a in ATTACKS)
    assert len(ATTACKS) >= 84 and len(BENIGN) >= 84
    assert min(kinds.values()) >= 10, kinds
    assert kinds["languages"] >= 14
    assert all(not _english(a["text"]) for a in ATTACKS if a["kind"] == "languages")
    assert sum(not _english(t) for t in BENIGN) >= 14


def test_no_fresh_fixture_text_is_repeated_or_nearly_so() -> None:
    assert len(set(TEXTS)) == len(TEXTS)
    shingles = [_shingles(t) for t in TEXTS]
    near = [
        (TEXTS[i], TEXTS[j])
        for i, j in combinations(range(len(TEXTS)), 2)
        if len(shingles[i] & shingles[j]) >= 0.6 * min(len(shingles[i]), len(shingles[j]))
    ]
    assert not near, near


def test_no_fresh_fixture_text_is_copied_from_the_training_data() -> None:
    found = copied_from_training_data(TEXTS)
    assert not found, found


def test_no_fresh_fixture_text_is_copied_from_the_first_fixture() -> None:
    found = copied(TEXTS, [a["text"] for a in FIRST_ATTACKS] + FIRST_BENIGN)
    assert not found, found  # only the fresh texts: the first fixture's are not shown
