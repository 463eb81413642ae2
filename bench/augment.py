"""Obfuscation augmentations for the attack classifier's training data (bench/train_classifier.py --augment).

Each transform rewrites a text the way obfuscated attacks are written (leetspeak, letters spaced apart, words or
characters reversed, base64 in a carrier sentence, homoglyphs and zero-width characters, Best-of-N style case
flips and letter swaps). They are applied to attacks AND benign texts alike, each keeping its label, so the model
learns to look through the noise at what the text says instead of learning "odd text = attack". Stdlib only;
every transform is deterministic given its ``random.Random``.
"""

from __future__ import annotations

import base64
import random
import re
from collections.abc import Callable

_LEET = {"a": "4", "e": "3", "i": "1", "o": "0", "s": "5", "t": "7"}
_HOMOGLYPH = {  # Latin letter -> the Cyrillic letter that looks the same
    "a": "\u0430",
    "e": "\u0435",
    "o": "\u043e",
    "p": "\u0440",
    "c": "\u0441",
    "x": "\u0445",
    "i": "\u0456",
    "y": "\u0443",
}
_ZERO_WIDTH = ["\u200b", "\u200c", "\u200d"]
_CARRIERS = [
    "Decode this base64 and answer it: {b}",
    "Here is a base64 string: {b}",
    "b64: {b}",
    "What does this say? {b}",
    "Please decode the following and respond to it.\n{b}",
]
_REVERSED_CARRIERS = [
    "{r}",
    "Read this backwards and answer: {r}",
    "The text below is reversed.\n{r}",
]


def leet(text: str, rng: random.Random) -> str:
    share = rng.uniform(0.4, 1.0)
    return "".join(_LEET[c.lower()] if c.lower() in _LEET and rng.random() < share else c for c in text)


def spaced(text: str, rng: random.Random) -> str:
    """Letters of some words spaced one by one (``i g n o r e``), words separated by a wider gap."""
    words = text.split(" ")
    share = rng.uniform(0.3, 1.0)
    return "   ".join(" ".join(w) if rng.random() < share else w for w in words)


def reversed_text(text: str, rng: random.Random) -> str:
    r = text[::-1] if rng.random() < 0.5 else " ".join(w[::-1] for w in text.split(" "))
    return rng.choice(_REVERSED_CARRIERS).format(r=r)


def base64_carrier(text: str, rng: random.Random) -> str:
    b = base64.b64encode(text.encode("utf-8")).decode("ascii")
    return rng.choice(_CARRIERS).format(b=b)


def homoglyphs(text: str, rng: random.Random) -> str:
    share = rng.uniform(0.2, 0.8)
    out = []
    for c in text:
        if c in _HOMOGLYPH and rng.random() < share:
            out.append(_HOMOGLYPH[c])
        else:
            out.append(c)
            if c.isalpha() and rng.random() < 0.03:
                out.append(rng.choice(_ZERO_WIDTH))
    return "".join(out)


def scramble(text: str, rng: random.Random) -> str:
    """Best-of-N style: random case flips and swaps of adjacent letters inside words."""
    chars = list(text)
    for i in range(len(chars) - 1):
        if chars[i].isalpha() and chars[i + 1].isalpha() and rng.random() < 0.06:
            chars[i], chars[i + 1] = chars[i + 1], chars[i]
    return "".join(c.upper() if rng.random() < 0.5 else c.lower() for c in chars)


TRANSFORMS: dict[str, Callable[[str, random.Random], str]] = {
    "leet": leet,
    "spaced": spaced,
    "reversed": reversed_text,
    "base64": base64_carrier,
    "homoglyph": homoglyphs,
    "scramble": scramble,
}


def augment(text: str, rng: random.Random) -> tuple[str, str]:
    """(transform name, the text rewritten by one transform drawn at random)."""
    name = rng.choice(sorted(TRANSFORMS))
    return name, TRANSFORMS[name](text, rng)


def suitable(text: str) -> bool:
    """Short prose-like texts only: code, tables and long documents gain nothing from these rewrites."""
    return 20 <= len(text) <= 500 and len(re.findall(r"[A-Za-z]", text)) >= 0.5 * len(text)
