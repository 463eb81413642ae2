"""Encodings that hide what a text says, undone for the classifier's decoded views (views.py, issue 27).

Each function returns the text as a reader would decode it, or None when the text shows no such encoding, so
ordinary text gets no second reading:

- ``decoded_runs``: runs of Morse code, hex bytes, 8-bit binary, percent-escapes and HTML character references
  that decode to readable text (hashes, addresses and identifiers do not, so logs and code get no view);
- ``untagged``: invisible Unicode tag characters (U+E0020-E007E, "ASCII smuggling"), which the tokenizer drops;
- ``folded``: letters of other alphabets that stand for Latin ones (mathematical bold or script, fullwidth,
  circled; Cyrillic and Greek look-alikes inside Latin words).
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Callable
from urllib.parse import unquote

_HEX = re.compile(r"(?<![0-9A-Za-z])(?:(?:0x|\\x)?[0-9A-Fa-f]{2}[ :,]?){12,}(?![0-9A-Za-z])")
_BINARY = re.compile(r"(?<![01])(?:[01]{8}[ ,]?){8,}(?![01])")
_PERCENT = re.compile(r"(?:%[0-9A-Fa-f]{2}){12,}")
_ENTITY = re.compile(r"(?:&#(?:[0-9]{2,7}|[xX][0-9A-Fa-f]{2,6});){12,}")
_MORSE = re.compile(r"(?<![\w.\-])(?:[.\-]{1,7}(?: {1,3}| ?/ ?)){7,}[.\-]{1,7}(?![\w.\-])")
MORSE_CODE = dict(  # International Morse code, letters and digits in order
    zip(
        re.findall(
            r"[.\-]+",
            ".- -... -.-. -.. . ..-. --. .... .. .--- -.- .-.. -- -. --- .--. --.- .-. ... - ..- ...- .-- -..- -.--"
            " --.. ----- .---- ..--- ...-- ....- ..... -.... --... ---.. ----.",
        ),
        "abcdefghijklmnopqrstuvwxyz0123456789",
        strict=True,
    )
)
_TAG = re.compile("[\U000e0020-\U000e007e]+")
# letters of Cyrillic and Greek that look like Latin ones (Unicode's confusables, the common subset); read as
# Latin only inside a word that is all Latin or look-alike letters, in a text written mostly in Latin letters
_LOOK_ALIKE_LETTERS = "аеорсхуіјѕԁһӏԛԝАВЕКМНОРСТХІЈЅαοιυνκρχΑΒΕΖΗΙΚΜΝΟΡΤΥΧ"
_LOOK_ALIKE = str.maketrans(_LOOK_ALIKE_LETTERS, "aeopcxyijsdhlqwABEKMHOPCTXIJSaoiuvkpxABEZHIKMNOPTYX")
_WORD = re.compile(r"[^\W\d_]+")


def _readable(out: str) -> str | None:
    printable = sum(c.isprintable() or c.isspace() for c in out)
    letters = sum(c.isalpha() for c in out)
    return out if out.strip() and printable >= 0.95 * len(out) and letters >= 0.5 * len(out) else None


def _utf8(raw: bytes) -> str | None:
    try:
        return _readable(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return None


def _hex_run(run: str) -> str | None:
    digits = re.sub(r"0x|\\x|[ :,]", "", run)
    return _utf8(bytes.fromhex(digits)) if len(digits) % 2 == 0 else None


def _binary_run(run: str) -> str | None:
    bits = re.sub(r"[ ,]", "", run)
    return _utf8(bytes(int(bits[i : i + 8], 2) for i in range(0, len(bits), 8)))


def _percent_run(run: str) -> str | None:
    try:
        return _readable(unquote(run, errors="strict"))
    except UnicodeDecodeError:
        return None


def _morse_run(run: str) -> str | None:
    """Morse of words: dots and dashes both (a fifth of the marks at least, as in any sentence; rows of dots or
    dashes in ordinary text are neither), at least two words and eight letters."""
    dots, dashes = run.count("."), run.count("-")
    if min(dots, dashes) < 0.2 * (dots + dashes):
        return None
    words = re.split(r" ?/ ?| {3}", run.strip())
    try:
        out = " ".join("".join(MORSE_CODE[c] for c in w.split()) for w in words)
    except KeyError:
        return None
    return out if len(words) >= 2 and sum(c.isalpha() for c in out) >= 8 else None


def _entity_run(run: str) -> str | None:
    out = html.unescape(run)
    return out if sum(c.isalpha() for c in out) >= 0.5 * len(out) else None


def decoded_runs(text: str) -> str | None:
    """``text`` with its runs of Morse code, hex bytes, 8-bit binary, percent-escapes and HTML character
    references that decode to readable text replaced by that text; None when there are none (hashes, addresses
    and ids do not decode to text, so logs and code get no view)."""
    changed = False

    def sub(decode: Callable[[str], str | None]) -> Callable[[re.Match[str]], str]:
        def repl(m: re.Match[str]) -> str:
            nonlocal changed
            out = decode(m.group(0).strip(" ,:"))
            if out is None:
                return m.group(0)
            changed = True
            return f" {out} "

        return repl

    for pattern, decode in (
        (_MORSE, _morse_run),
        (_HEX, _hex_run),
        (_BINARY, _binary_run),
        (_PERCENT, _percent_run),
        (_ENTITY, _entity_run),
    ):
        text = pattern.sub(sub(decode), text)
    return text if changed else None


def untagged(text: str) -> str | None:
    """``text`` with invisible Unicode tag characters (U+E0020-E007E, "ASCII smuggling") read as the ASCII they
    mirror; None when it has none. The tokenizer drops them, so what they spell would otherwise go unread."""
    if not _TAG.search(text):
        return None
    return _TAG.sub(lambda m: "".join(chr(ord(c) - 0xE0000) for c in m.group(0)), text)


def _styled(c: str) -> str | None:
    """The ASCII letter a styled letter stands for (mathematical bold or script, fullwidth, circled: NFKC). Only
    from U+2000 on, where those alphabets live: the ordinal indicators of Latin-1 (3ª, 1º) are ordinary text."""
    if ord(c) < 0x2000:
        return None
    plain = unicodedata.normalize("NFKC", c)
    return plain if len(plain) == 1 and plain.isascii() and plain.isalpha() else None


def folded(text: str) -> str | None:
    """``text`` with letters from other alphabets that stand for Latin ones read as Latin; None when it has too
    few. Styled letters (mathematical bold or script, fullwidth, circled; their NFKC form), when a text has at
    least four; and, in a text written mostly in Latin letters, Cyrillic and Greek look-alikes inside words made
    only of Latin and look-alike letters. Ligatures, ellipses and the like stay as they are: ordinary text gets
    no second reading for them."""
    styled = {c: p for c in set(text) if (p := _styled(c))}
    out = text
    if sum(text.count(c) for c in styled) >= 4:
        out = "".join(styled.get(c, c) for c in text)
    if any(c in _LOOK_ALIKE_LETTERS for c in set(out)):
        letters = [c for c in out if c.isalpha()]
        if sum("a" <= c.lower() <= "z" for c in letters) >= 0.5 * len(letters):

            def fold(m: re.Match[str]) -> str:
                word = m.group(0)
                if any(c in _LOOK_ALIKE_LETTERS for c in word) and all(
                    c in _LOOK_ALIKE_LETTERS or "a" <= c.lower() <= "z" for c in word
                ):
                    return word.translate(_LOOK_ALIKE)
                return word

            out = _WORD.sub(fold, out)
    return out if out != text else None
