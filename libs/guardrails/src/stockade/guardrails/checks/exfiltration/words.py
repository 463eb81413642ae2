"""English words inside a token: a random key almost never holds two of them, a hand-made stand-in often does
(AKIALGSBKLIKEAREAL12, 7here4ar3not7he7oken5, bace4d59-fa7e-beef-cafe-...). The same idea as CredSweeper's
morpheme filter, with a word list of our own: common English words of four or more letters, words that
examples and test fixtures are made of, and hex-speak."""

from __future__ import annotations

from importlib import resources

_WORDS = sorted(
    {
        word
        for line in resources.files(__package__)
        .joinpath("words.txt")
        .read_text(encoding="utf-8")
        .splitlines()
        if not line.startswith("#")
        for word in line.split()
    },
    key=lambda word: (-len(word), word),
)  # longest first ("password" is one word, not pass + word), then alphabetical, so every run counts alike


def word_count(value: str, stop_after: int = 3) -> int:
    """How many distinct listed words the value holds (case-insensitive, longest first, each part of the value
    counted once), up to ``stop_after``."""
    rest = value.lower()
    found = 0
    for word in _WORDS:
        if word in rest:
            found += 1
            if found >= stop_after:
                break
            rest = rest.replace(word, "|")
    return found


def wordy(value: str) -> bool:
    """Two or more words in a value under 256 characters (three from 256): made of words, not random."""
    return word_count(value) > (1 if len(value) < 256 else 2)
