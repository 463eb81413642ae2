"""Decoded views of a text: what an obfuscated attack says once the obfuscation is undone.

The classifier reads WordPiece tokens. Base64, leetspeak (``1gn0r3 4ll``), reversed text, Caesar shifts (ROT13)
and Atbash, letters spaced apart, and the encodings of decodings.py (hex, binary, Morse, escapes, look-alike
letters, invisible tag characters) cut an instruction into fragments the model never saw in training, or hide
it, so it cannot tell what they say.
Rather than teach it every encoding, the check also scores the text as a reader would decode it, and keeps
the most suspicious reading. A view is added only when the text shows the trick (a decodable base64 run, words
mixing digits and letters, letters spaced or separated one by one, a reversal or a cipher that reads as more
ordinary words), so ordinary text costs nothing more.

Each view is scored as its own text; the verdict takes the highest attack score over the original and its
views (the original's span is reported when a view decided it).
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Callable

from stockade.guardrails.checks.classification.decodings import decoded_runs, folded, untagged

_B64 = re.compile(r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{16,}={0,2}(?![A-Za-z0-9+/=])")
_LEET_WORD = re.compile(r"\b(?=\w*[A-Za-z])(?=\w*[013457@$])[\w@$]{3,20}\b")
_LEET = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a", "$": "s"})
_SPACED = re.compile(r"(?<!\S)(?:\w {1,3}){3,}\w(?!\S)")
# letters cut apart by one repeated punctuation mark (i.g.n.o.r.e, i-g-n-o-r-e, i_g_n_o_r_e, i*g*n*o*r*e): at
# least three, the same mark throughout, letters only (version and section numbers such as 3.2.1 stay as they
# are); a word break is a space or the mark doubled (i_g_n_o_r_e__a_l_l)
_SEPARATED = re.compile(r"(?<![\w.\-*|/+~])[^\W\d_]([.\-_*|/+~])[^\W\d_](?:\1{1,2}[^\W\d_])+(?!\w)")
MAX_LEET_WORDS = 256  # distinct words a leetspeak reading weighs (each is tokenised twice)
MAX_VIEW_CHARS = 8_192  # views are built from the first 8 kB only: encodings in a long document are rare


def decoded_base64(text: str) -> str | None:
    """The base64 runs of ``text`` that decode to printable UTF-8 text, joined; None when there are none."""
    parts = []
    for run in _B64.findall(text):
        if not any(c.isdigit() or c in "+/=" for c in run) and run.isalpha() and run.islower():
            continue  # a long lower-case word, not base64
        padded = run + "=" * (-len(run) % 4)
        try:
            raw = base64.b64decode(padded, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            continue
        printable = sum(c.isprintable() or c.isspace() for c in raw)
        if raw.strip() and printable >= 0.95 * len(raw) and sum(c.isalpha() for c in raw) >= 0.5 * len(raw):
            parts.append(raw)
    return "\n".join(parts) or None


def unleet(text: str, token_count: Callable[[str], int] | None = None) -> str | None:
    """``text`` with digits and symbols inside words read as letters, when at least two words mix them. Given
    ``token_count``, only the words that become one whole WordPiece translated (a word the vocabulary knows) are
    translated, and at least two must: ``1gn0r3`` falls apart into fragments and ``ignore`` is one WordPiece,
    while identifiers such as ``amd64``, ``0x5fd0`` or ``num1`` in logs and code do not become words, so a log
    file gets no view and an attack in leetspeak inside one still does."""
    words = _LEET_WORD.findall(text)
    if len(words) < 2:
        return None
    if token_count is None:
        return _LEET_WORD.sub(lambda m: m.group(0).translate(_LEET), text)
    better = {
        w
        for w in sorted(set(words))[:MAX_LEET_WORDS]
        if token_count(w.translate(_LEET)) == 1 < token_count(w)
    }
    if sum(w in better for w in words) < 2:
        return None
    return _LEET_WORD.sub(lambda m: m.group(0).translate(_LEET) if m.group(0) in better else m.group(0), text)


def unspaced(text: str) -> str | None:
    """``text`` with runs of letters spaced one by one (``i g n o r e``) joined, when it has such runs."""
    if not _SPACED.search(text):
        return None

    def join(m: re.Match[str]) -> str:
        return re.sub(r" {2,}", "\x00", m.group(0)).replace(" ", "").replace("\x00", " ")

    return _SPACED.sub(join, text)


def unseparated(text: str) -> str | None:
    """``text`` with runs of letters separated one by one by a repeated mark (``i.g.n.o.r.e``) joined, a doubled
    mark read as a space, when it has such runs."""
    if not _SEPARATED.search(text):
        return None

    def join(m: re.Match[str]) -> str:
        mark = m.group(1)
        return m.group(0).replace(mark * 2, "\x00").replace(mark, "").replace("\x00", " ")

    return _SEPARATED.sub(join, text)


def views(text: str, token_count: Callable[[str], int]) -> list[str]:
    """The decoded readings of ``text`` worth scoring besides it (often none). ``token_count`` counts the
    classifier's tokens: reversed or enciphered text is read decoded when that takes at least a quarter fewer
    tokens (real words are whole WordPieces; reversed or shifted ones fall apart into fragments). Tag characters
    and look-alike letters are read as what they stand for in every reading, and that reading is scored too."""
    raw = text[:MAX_VIEW_CHARS]
    head = untagged(raw) or raw  # tag characters are invisible: every reading reads what they spell
    head = folded(head) or head  # look-alike letters: every reading reads them as the letters they mimic
    out = [
        v
        for v in (
            decoded_base64(head),
            decoded_runs(head),
            unleet(head, token_count),
            unspaced(head),
            unseparated(head),
        )
        if v
    ]
    out += decoded_parts(head, token_count)
    if head != raw:
        out.insert(0, head)
    return out


_PART = re.compile(r"([^\n:\"']+)")


_ABC = "abcdefghijklmnopqrstuvwxyz"
# every Caesar shift (ROT13 among them) and Atbash, the ciphers of CipherChat-style jailbreaks, as the position
# each letter of a cipher text stands for
_CIPHERS = [[(i - k) % 26 for i in range(26)] for k in range(1, 26)] + [[25 - i for i in range(26)]]
# English letter frequencies (percent): the cipher a part most likely is, is the one that makes it read most
# like English; only that one is tokenised
_A_TO_M = (8.2, 1.5, 2.8, 4.3, 12.7, 2.2, 2.0, 6.1, 7.0, 0.15, 0.77, 4.0, 2.4)
_N_TO_Z = (6.7, 7.5, 1.9, 0.1, 6.0, 6.3, 9.1, 2.8, 0.98, 2.4, 0.15, 2.0, 0.07)
_LOG_ENGLISH = [math.log(f) for f in _A_TO_M + _N_TO_Z]
FRAGMENTED = 0.3  # WordPieces per letter above which a part is tried against the ciphers (English: about 0.2)


def _deciphered(part: str) -> str | None:
    """``part`` through the cipher that makes its letters most like English, or None when none does better than
    the part as it is."""
    counts = [0] * 26
    for c in part.lower():
        if "a" <= c <= "z":
            counts[ord(c) - 97] += 1

    def fit(to: list[int]) -> float:
        return sum(n * _LOG_ENGLISH[to[i]] for i, n in enumerate(counts) if n)

    best = max(_CIPHERS, key=fit)
    if fit(best) <= fit(list(range(26))):
        return None
    plain = "".join(_ABC[j] for j in best)
    return part.translate(str.maketrans(_ABC + _ABC.upper(), plain + plain.upper()))


def decoded_parts(text: str, token_count: Callable[[str], int]) -> list[str]:
    """``text`` read backwards, and read through a letter cipher (any Caesar shift, ROT13 among them, or Atbash),
    each part (between line breaks, colons and quotes) where that reads as ordinary words: one reading per kind
    that changed a part. A part of at least 12 letters whose decoding takes at least a quarter fewer tokens
    counts: real words are whole WordPieces, reversed or shifted ones fall apart. The ciphers are tried only on
    parts that already fall apart (``FRAGMENTED``), and only the cipher whose letters read most like English is
    tokenised, so ordinary text costs one tokenisation per part."""
    parts = _PART.split(text)  # the parts at odd indices, what lies between them at even ones
    backwards, deciphered = list(parts), list(parts)
    flipped = shifted = False
    for i in range(1, len(parts), 2):
        part = parts[i]
        if sum(c.isalpha() for c in part) < 12:
            continue
        n = token_count(part)
        if token_count(part[::-1]) <= 0.75 * n:
            backwards[i], flipped = part[::-1], True
        latin = sum(c in _ABC for c in part.lower())
        if latin >= 12 and n >= FRAGMENTED * latin:
            best = _deciphered(part)
            if best is not None and token_count(best) <= 0.75 * n:
                deciphered[i], shifted = best, True
    return ["".join(p) for p, changed in ((backwards, flipped), (deciphered, shifted)) if changed]
