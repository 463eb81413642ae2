"""Text to n-gram terms: the one featurisation both training and serving use.

Training hands these analyzers to scikit-learn's ``TfidfVectorizer(analyzer=...)``; serving calls them
directly (:mod:`stockade.toxicity_classifier.model`), so the two cannot drift apart. Changing anything here
changes the terms a trained model knows: bump :data:`FEATURIZER_VERSION` and retrain.
"""

from __future__ import annotations

import html
import re

FEATURIZER_VERSION = "1"
WORD_NGRAMS = (1, 3)
CHAR_NGRAMS = (2, 5)

_URL = re.compile(r"(?:https?://|www\.)\S+", re.IGNORECASE)
_MENTION = re.compile(r"@[\w\-]+")
_RETWEET = re.compile(r"\brt\b")  # the tweets' retweet marker, not language
_REPEAT = re.compile(r"(.)\1{2,}")  # "soooo" and "!!!!" count like "soo" and "!!"
_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"\w+(?:'\w+)?")


def normalize(text: str) -> str:
    """Lower-cased text with HTML entities decoded, URLs and @mentions replaced by placeholders, runs of one
    character cut to two and white space collapsed."""
    text = html.unescape(text).lower()
    text = _URL.sub(" urlhere ", text)
    text = _MENTION.sub(" mentionhere ", text)
    text = _RETWEET.sub(" ", text)
    text = _REPEAT.sub(r"\1\1", text)
    return _SPACE.sub(" ", text).strip()


def word_terms(normalized: str) -> list[str]:
    """Word n-grams (1 to 3 words) of a normalized text."""
    words = _WORD.findall(normalized)
    low, high = WORD_NGRAMS
    terms: list[str] = []
    for n in range(low, high + 1):
        terms.extend(" ".join(words[i : i + n]) for i in range(len(words) - n + 1))
    return terms


def char_terms(normalized: str) -> list[str]:
    """Character n-grams (2 to 5) inside each space-padded word, punctuation kept (``f*ck`` shares ``f*``)."""
    low, high = CHAR_NGRAMS
    terms: list[str] = []
    for token in normalized.split(" "):
        if not token:
            continue
        padded = f" {token} "
        for n in range(low, min(high, len(padded)) + 1):
            terms.extend(padded[i : i + n] for i in range(len(padded) - n + 1))
    return terms
