"""What the PII check keeps of the analyzer's results.

- No finding crosses a line break: a span is cut at the first line break after its start (and trimmed of
  surrounding whitespace), in :func:`clip_to_line`, for every recognizer. spaCy's entities ran over newlines
  and a pattern's ``\\s`` matched them, so a span could swallow a git log's time-zone offset, the blank line and
  the next line's text; a value worth masking (a name, a number, an address line) sits on one line. The
  stockade patterns are also written line by line (:func:`line_local`), so a cut never leaves half a match.
  An address written over several lines is masked line by line: a STREET_ADDRESS that ends its line carries on
  to up to three following short lines (city, postcode, country: :func:`address_continuation`), each its
  own finding.
- A PERSON finding of a single word needs a cue that it is a person (:func:`person_cue`: "Mr.", "Dear",
  "my name is", "says", a possessive) unless ``single_word_names: always``: spaCy's small model calls many
  capitalised words of code, logs, tables and place names a person, and a lone first name identifies little.
- A PERSON finding must look like a person's name: letters (any script), spaces, apostrophes, hyphens, dots
  and commas only, words one space apart (not table columns), not an attribute or a call in code
  (``http.Request``); every word capitalised (name particles such as "van", "de", "bin" aside: a lower-case
  "config show" is a command more often than a name); not an identifier (``StopIteration``, ``PackageKit``;
  "McDonald", "DeShawn" are names), not one all-capital word (``JSON``), not dates (``Fri Mar``), not one
  common word of technical text or name of a technology ("Install", "Secret", "Python"), not a well-known
  place (``place_names.txt``), not a word after "in", "via", "near" or before "trains", "loop", "area", and
  not a phrase that starts or ends with a word naming a place or an institution ("Loch Lomond", "Atacama
  Desert", "Manchester Railway"). The word lists are in ``name_words.txt``.
"""

from __future__ import annotations

import re

from stockade.guardrails.checks.pii.wordlists import (
    COMMON_WORDS,
    DATE_ABBREVIATIONS,
    DATE_WORDS,
    NOT_PERSON_FIRST_WORDS,
    NOT_PERSON_LAST_WORDS,
    PARTICLES,
    PERSON_CUES,
    PERSON_VERBS_AFTER,
    PLACE_NAMES,
    PLACE_PREPOSITIONS,
    THING_NOUNS,
)

_NAME_CHARS = re.compile(r"[^\W\d_]|[\s'\u2019.,\-]")
_NAME_PREFIXES = ("Mc", "Mac", "De", "Di", "Da", "Du", "La", "Le", "Van", "Von", "Fitz")
_WORD_PARTS = re.compile(r"[\-'\u2019]")
_WORD = re.compile(r"[^\W\d_]+")
_CUE_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")
# a short line part: up to 40 characters from its first letter or digit, up to sentence punctuation (a full stop
# only where a word or number follows it: "Apt. 297")
_CONTINUATION = re.compile(r"[ \t]*,?[ \t]*[^\W_](?:[^\n.?!;:]|\.(?=\S|[ \t]\d)){0,40}")


def line_local(regex: str) -> str:
    """``regex`` with every ``\\s`` (alone or in a character class) read as whitespace other than a newline."""
    out, i, in_class = [], 0, False
    while i < len(regex):
        ch = regex[i]
        if ch == "\\" and i + 1 < len(regex):
            pair = regex[i : i + 2]
            out.append(("\\t \\f\\v\\r" if in_class else r"[^\S\n]") if pair == r"\s" else pair)
            i += 2
            continue
        if ch == "[" and not in_class:
            in_class = True
        elif ch == "]" and in_class and regex[i - 1] != "[":
            in_class = False
        out.append(ch)
        i += 1
    return "".join(out)


def address_continuation(text: str, end: int, max_lines: int = 3) -> list[tuple[int, int]]:
    """Spans of the lines that continue an address ending at ``end``: only when nothing but whitespace or a
    comma follows it on its line, then the start of each next line (up to 40 characters from its first letter
    or digit, up to sentence punctuation) while the line before was taken whole."""
    spans: list[tuple[int, int]] = []
    eol = text.find("\n", end)
    if eol == -1 or text[end:eol].strip(" \t,\r"):
        return spans
    while len(spans) < max_lines:
        start = eol + 1
        eol = text.find("\n", start)
        line_end = len(text) if eol == -1 else eol
        match = _CONTINUATION.match(text, start, line_end)
        span = clip_to_line(text, start, match.end()) if match else None
        if match is None or span is None:
            break
        spans.append(span)
        if eol == -1 or text[match.end() : line_end].strip():
            break  # the address ends inside this line
    return spans


def clip_to_line(text: str, start: int, end: int) -> tuple[int, int] | None:
    """The part of ``text[start:end]`` on the line where the span starts, without surrounding whitespace;
    None when nothing but whitespace and punctuation is left."""
    while start < end and text[start].isspace():
        start += 1
    cut = text.find("\n", start, end)
    if cut != -1:
        end = cut
    while end > start and text[end - 1].isspace():
        end -= 1
    if not any(ch.isalnum() for ch in text[start:end]):
        return None
    return start, end


def plausible_person(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]``, found as PERSON, can be a person's name (see the module docstring)."""
    span = text[start:end]
    if not all(_NAME_CHARS.fullmatch(ch) for ch in span) or "  " in span or "\t" in span:
        return False  # a name has no digits or symbols, and its words are not table columns apart
    if _in_code(text, start, end):
        return False
    words = [_strip_possessive(w.strip(".,")) for w in span.split()]
    words = [w for w in words if w]
    if not words:
        return False
    lowered = [w.casefold() for w in words]
    if not all(lw in PARTICLES or _name_word(w) for w, lw in zip(words, lowered, strict=True)):
        return False
    if len(words) == 1 and len(words[0]) > 1 and words[0].isupper():
        return False
    if all(w in DATE_ABBREVIATIONS for w in lowered):
        return False
    if all(w in DATE_WORDS for w in lowered) and text[end:].lstrip(" ")[:1].isdigit():
        return False
    if len(words) == 1 and (lowered[0] in COMMON_WORDS or _place_by_position(text, start, end)):
        return False
    if " ".join(lowered) in PLACE_NAMES:
        return False
    return not (
        len(words) > 1 and (lowered[-1] in NOT_PERSON_LAST_WORDS or lowered[0] in NOT_PERSON_FIRST_WORDS)
    )


def single_word(text: str, start: int, end: int) -> bool:
    """Whether the span is one word (a name without a surname, or a word that only looks like a name)."""
    return len(text[start:end].split()) == 1


def person_cue(text: str, start: int, end: int) -> bool:
    """Whether the words around ``text[start:end]`` on its line say it is a person: a title, greeting, role,
    relation or "name" among the four words before it ("Mr. Spears", "my name is Christine", "says Izumi"),
    a possessive after it ("Amanda's"), or a verb of speech right after it ("Izumi says")."""
    line_start = text.rfind("\n", 0, start) + 1
    before = _CUE_WORD.findall(text[max(line_start, start - 60) : start].casefold())[-4:]
    if any(w in PERSON_CUES for w in before):
        return True
    if text[end : end + 2] in ("'s", "\u2019s"):
        return True
    after = re.match(r"[ \t]+([a-z]+)\b", text[end : end + 20])
    return after is not None and after.group(1) in PERSON_VERBS_AFTER


def _in_code(text: str, start: int, end: int) -> bool:
    """An attribute or a call: ``http.Request``, ``Request(``."""
    attribute = (
        start >= 2 and text[start - 1] == "." and (text[start - 2].isalnum() or text[start - 2] == "_")
    )
    return attribute or text[end : end + 1] == "("


def _place_by_position(text: str, start: int, end: int) -> bool:
    """Whether the word at ``text[start:end]`` follows a place preposition or precedes a noun for a thing."""
    before = _WORD.findall(text[max(0, start - 20) : start].split("\n")[-1])
    if before and text[start - 1] == " " and before[-1].casefold() in PLACE_PREPOSITIONS:
        return True
    after = re.match(r"[ \t]+([a-z]+)\b", text[end : end + 30])
    return after is not None and after.group(1) in THING_NOUNS


def _name_word(word: str) -> bool:
    """A capitalised word ("Smith", "O'Brien", "Jean-Luc", "McDonald", "DeShawn"), an initial, an all-capital
    word, or a word of a script without letter case; not an identifier ("StopIteration", "DataFrame")."""
    if word.isupper() or not any(ch.isupper() or ch.islower() for ch in word):
        return True
    for part in (p for p in _WORD_PARTS.split(word) if p):
        if not part[0].isupper():
            return False
        rest = part[1:]
        for prefix in _NAME_PREFIXES:  # McDonald, MacArthur, DeShawn, DiCaprio, VanDyke
            if part.startswith(prefix) and len(part) > len(prefix) and part[len(prefix)].isupper():
                rest = part[len(prefix) + 1 :]
                break
        if any(ch.isupper() for ch in rest):
            return False
    return True


def _strip_possessive(name: str) -> str:
    for suffix in ("'s", "\u2019s"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name
