"""Word lists of the PII check, read once from the text files beside this module.

``place_names.txt``: countries (the country-name recognizer, LOCATION) and the places the person-name filter
will not call a person (``PLACE_NAMES``: countries, regions, cities, rivers, mountains, seas; minus places that
are also common given names, so "Sydney said" is still a person). ``name_words.txt``: the filter's other lists
(name particles, date words, words that start or end names of places and institutions, common words of
technical text and names of technologies). Files are sectioned with ``[name]`` lines; ``#`` starts a comment.
"""

from __future__ import annotations

from functools import lru_cache
from importlib.resources import files


@lru_cache(maxsize=4)
def sections(filename: str) -> dict[str, tuple[str, ...]]:
    """The sections of one word-list file: ``{section: (entry, ...)}``, entries in file order."""
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    text = (
        files(__package__ or "stockade.guardrails.checks.pii").joinpath(filename).read_text(encoding="utf-8")
    )
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("[") and line.endswith("]"):
            current = out.setdefault(line[1:-1], [])
        elif current is not None:
            current.append(line)
    return {name: tuple(entries) for name, entries in out.items()}


def _places() -> dict[str, tuple[str, ...]]:
    return sections("place_names.txt")


def _words(section: str) -> frozenset[str]:
    return frozenset(w.casefold() for w in sections("name_words.txt")[section])


COUNTRIES: list[str] = list(_places()["countries"])
GIVEN_NAMES = frozenset(_places()["given names"])
PLACE_NAMES = frozenset(
    name.casefold()
    for part in ("countries", "regions", "cities", "nature")
    for name in _places()[part]
    if name not in GIVEN_NAMES
)
PARTICLES = _words("particles")
DATE_ABBREVIATIONS = _words("date abbreviations")
DATE_WORDS = _words("date words")
NOT_PERSON_LAST_WORDS = _words("not person last words")
NOT_PERSON_FIRST_WORDS = _words("not person first words")
COMMON_WORDS = _words("common words") | _words("technology names")
PLACE_PREPOSITIONS = _words("place prepositions")
THING_NOUNS = NOT_PERSON_LAST_WORDS | _words("thing nouns")
PERSON_CUES = _words("person cues")
PERSON_VERBS_AFTER = _words("person verbs after")
