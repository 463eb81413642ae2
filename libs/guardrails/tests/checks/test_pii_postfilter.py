"""What the PII check keeps of the analyzer's results: one line per finding, names that can be names."""

from __future__ import annotations

import re

import pytest

from stockade.guardrails.checks.pii.postfilter import (
    address_continuation,
    clip_to_line,
    line_local,
    person_cue,
    plausible_person,
)
from stockade.guardrails.checks.pii.wordlists import COUNTRIES, PLACE_NAMES


@pytest.mark.parametrize(
    ("text", "span", "expected"),
    [
        ("Date: Fri Mar 8 2024 -0500\n\n    Bump pydantic", (21, 44), "-0500"),
        ("  John Smith\nnext line", (0, 22), "John Smith"),
        ("one line only", (4, 8), "line"),
        ("\n\nJane\nDoe", (0, 10), "Jane"),
    ],
)
def test_a_span_is_cut_at_its_first_line_break(text: str, span: tuple[int, int], expected: str) -> None:
    clipped = clip_to_line(text, *span)
    assert clipped is not None and text[clipped[0] : clipped[1]] == expected


def test_a_span_left_with_only_whitespace_or_punctuation_is_dropped() -> None:
    assert clip_to_line("a\n\n - \nb", 1, 6) is None


def test_line_local_patterns_never_read_a_newline() -> None:
    pattern = line_local(r"\d+\s+[A-Z]\w+[\s.\-]\d+")
    assert re.fullmatch(pattern, "42 Baker\t7") and re.fullmatch(pattern, "42 Baker.7")
    assert not re.search(pattern, "0500\n\n Bump 2") and not re.search(pattern, "42 Baker\n7")
    assert line_local(r"(?=\S)\S+") == r"(?=\S)\S+"  # only \s changes


def test_an_address_ending_its_line_continues_on_short_lines() -> None:
    text = "Ship to 5100 Quadra 104\n Suite 845\n Evionnaz\n Switzerland 05377 by Friday. Then more.\nThanks"
    spans = address_continuation(text, text.index("104") + 3)
    assert [text[a:b] for a, b in spans] == ["Suite 845", "Evionnaz", "Switzerland 05377 by Friday"]
    assert address_continuation("At 12 Main St, see you\nLondon", 13) == []  # text follows on its line


@pytest.mark.parametrize(
    "name",
    [
        "John Smith",
        "O'Brien",
        "Jean-Luc Picard",
        "McDonald",
        "DeShawn Jones",
        "Ludwig van Beethoven",
        "JOHN SMITH",
        "Amanda's",
        "Izumi",
        "Sydney",
        "张伟",
    ],
)
def test_names_stay_persons(name: str) -> None:
    assert plausible_person(f"said {name} today", 5, 5 + len(name))


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("except StopIteration:", "StopIteration"),
        ("df = DataFrame()", "DataFrame"),
        ("X-Forwarded-For $proxy_add_x_forwarded_for;", "$proxy_add_x_forwarded_for"),
        ("ON shipments (order_id);", "order_id"),
        ("member ID XYZ-987654321", "ID XYZ-987654321"),
        ("general OLTP, JSON, GIS", "JSON"),
        ("Date: Fri Mar 8", "Fri Mar"),
        ("Rotterdam: 1,204 pallets", "Rotterdam"),
        ("rain in New York", "New York"),
        ("The Atacama Desert is dry", "Atacama Desert"),
        ("via Loch Lomond (5h)", "Loch Lomond"),
        ("- name: Install nginx", "Install"),
        ("Portree to Glasgow via Glencoe and", "Glencoe"),
        ("high-speed Frecciarossa trains", "Frecciarossa"),
        ("myapp config show --origin", "config show"),
    ],
)
def test_what_cannot_be_a_name_is_not_a_person(text: str, name: str) -> None:
    start = text.index(name)
    assert not plausible_person(text, start, start + len(name))


@pytest.mark.parametrize(
    ("text", "name", "cued"),
    [
        ("Mr. Spears is 61", "Spears", True),
        ("my name is Christine", "Christine", True),
        ("Dear Anna, thanks", "Anna", True),
        ("says Izumi.", "Izumi", True),
        ("Izumi says hello", "Izumi", True),
        ("Amanda's car", "Amanda", True),
        ("Rotterdam can take the overflow", "Rotterdam", False),
        ("Early train to Machu, then", "Machu", False),
        ("Mr. Smith\nRotterdam: 12 pallets", "Rotterdam", False),  # a cue on another line does not count
    ],
)
def test_a_single_word_is_a_person_after_a_cue(text: str, name: str, cued: bool) -> None:
    start = text.index(name)
    assert person_cue(text, start, start + len(name)) is cued


def test_place_lists_leave_out_given_names() -> None:
    assert {"rotterdam", "new york", "danube"} <= PLACE_NAMES
    assert not {"sydney", "florence", "paris"} & PLACE_NAMES
    assert "Germany" in COUNTRIES and "United Kingdom" in COUNTRIES
