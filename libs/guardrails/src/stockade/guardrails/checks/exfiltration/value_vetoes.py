"""Vetoes on a value alone: why a value next to a credential word (``password = ...``), or the body of a key
format's match, is not a secret. Each is a named :class:`Veto`; the scanner counts the ones that fire.

``WEAK_PASSWORD`` is the one veto a policy may switch off (``secrets.report_weak_passwords``, on by default):
``password123`` in documentation is a stand-in, in a user's config file it is a weak password worth reporting.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from functools import cached_property

from stockade.guardrails.checks.exfiltration import plausibility as shape
from stockade.guardrails.checks.exfiltration.validators import number_like, sealed_ciphertext, url_password_ok
from stockade.guardrails.checks.exfiltration.veto import Veto
from stockade.guardrails.checks.exfiltration.words import wordy


@dataclass(frozen=True)
class ContextValue:
    """A value found next to a credential word, with the name it was given and the scan's thresholds."""

    raw: str
    key: str
    quoted: bool = True
    entropy_threshold: float = 3.5
    min_length: int = 12

    @cached_property
    def value(self) -> str:
        """The value without a sentence's full stop (``.``/``,`` after it)."""
        return self.raw.rstrip(".,") if len(self.raw) > 5 else self.raw

    @cached_property
    def entropy(self) -> float:
        return shape.shannon_entropy(self.value)

    @cached_property
    def password_key(self) -> bool:
        """Named as a password (pass, pwd, IDENTIFIED BY, mysql -p): real passwords are short and mixed."""
        return bool(shape.PASSWORD_KEY.search(self.key))


def _made_up_value(v: str) -> bool:
    return bool(shape.FAKE.search(v))


def _low_entropy(v: str) -> bool:
    return len(v) >= 16 and shape.shannon_entropy(v) < 3.0


_IDENTIFIER = re.compile(r"[A-Za-z][a-z]*(?:[_\-.#][a-z][a-z0-9]*)*")


def _code(c: ContextValue) -> bool:
    return bool(
        shape.OPEN_CALL.fullmatch(c.raw)
        or shape.ODD_START.match(c.value)
        or (not c.quoted and shape.CODE.match(c.value))
    )


def _short_and_plain(c: ContextValue) -> bool:
    """Under ``min_length``, a value is kept only when it mixes cases and digits throughout and hardly repeats
    (Xk9mQ2vL, not Version2)."""
    v = c.value
    if len(v) < 8 or shape.MIXED.search(v) is None or len(set(v)) < 0.75 * len(v):
        return True
    classes = [ch.isdigit() + 2 * ch.isupper() for ch in v]
    return sum(a != b for a, b in itertools.pairwise(classes)) < (len(v) - 1) / 2


_cv = Veto[ContextValue]

WEAK_PASSWORD = _cv(
    "weak_password",
    "the words written where a password goes, with digits or symbols (password123, admin2024)",
    lambda c: shape.weak_password(c.value),
)
# In the order they are tried; the first that fires is counted. Together they say the same whatever the order.
CONTEXT_VETOES: tuple[Veto[ContextValue], ...] = (
    _cv(
        "cut_short", "elided in an example (eyJ2IjoiMSIs..., sk-abc…)", lambda c: c.raw.endswith(shape.ELIDED)
    ),
    _cv(
        "time_stamp",
        "a date or time stamp: when a credential changed",
        lambda c: shape.TIMESTAMP.fullmatch(c.raw),
    ),
    _cv("code", "a call, attribute chain, constant name or markup", _code),
    _cv(
        "placeholder",
        "${VAR}, %VAR%, <your-key>, None, changeme, ***",
        lambda c: shape.PLACEHOLDER.search(c.value),
    ),
    WEAK_PASSWORD,
    _cv(
        "repeats_key",
        "the value repeats its name (secret_key = secret)",
        lambda c: c.value.lower() == c.key.lower() or shape.like_key(c.value, c.key),
    ),
    _cv(
        "example_value",
        "example, sample, dummy, xxxxxx, a standard's example",
        lambda c: _made_up_value(c.value),
    ),
    _cv(
        "pattern_run",
        "a run of one character or of consecutive ones, or two runs woven together (9f8e7d6c...)",
        lambda c: shape.pattern_run(c.value) or shape.interleaved_runs(c.value),
    ),
    _cv(
        "user_as_password",
        "a user name given as its own password (admin/admin)",
        lambda c: shape.SAME_PAIR.match(c.value),
    ),
    _cv("number", "a decimal number or a hex one under 22 digits", lambda c: number_like(c.value)),
    _cv(
        "identifier",
        "a variable, constant, header or event name (x-amz-content-sha256, db_password)",
        lambda c: (_IDENTIFIER.fullmatch(c.value) and len(c.value) < 24) or shape.SNAKE.fullmatch(c.value),
    ),
    _cv("template", 'f"{id}", #{token}, %(pw)s, {{ key }}', lambda c: shape.INTERPOLATION.search(c.value)),
    _cv(
        "not_a_value",
        "a URL, path, route, entry point, product/version, e-mail address, type name or pattern",
        lambda c: (
            shape.NOT_A_VALUE.match(c.value)
            or shape.EMAIL.fullmatch(c.value)
            or shape.TYPE_NAME.fullmatch(c.value)
            or shape.PATTERN_VALUE.search(c.value)
        ),
    ),
    _cv(
        "describing_key",
        "a name that describes a credential (token_url, PASSWORD_REGEX, next_page_token), not one that holds it",
        lambda c: shape.NOT_A_SECRET_KEY.search(c.key) or shape.PAGING_KEY.search(c.key),
    ),
    _cv("encrypted", "a sealed-secrets ciphertext", lambda c: sealed_ciphertext(c.value)),
    _cv(
        "low_entropy",
        "too few bits per character for a generated value",
        lambda c: (
            _low_entropy(c.value)
            or (not c.password_key and len(c.value) >= c.min_length and c.entropy < c.entropy_threshold)
        ),
    ),
    _cv(
        "plain_word",
        "a password under 6 characters, of letters only or with almost no variety",
        lambda c: c.password_key and (len(c.value) < 6 or c.entropy < 2.0 or c.value.isalpha()),
    ),
    _cv(
        "made_of_words",
        "words or a CamelCase name, not a generated key",
        lambda c: (
            not c.password_key
            and (wordy(c.value) or shape.camel_case_name(c.value) or shape.pascal_name(c.value))
        ),
    ),
    _cv(
        "short_and_plain",
        "shorter than min_token_length and not mixed throughout",
        lambda c: not c.password_key and len(c.value) < c.min_length and _short_and_plain(c),
    ),
)


@dataclass(frozen=True)
class MatchedValue:
    """The value a key format matched, with the format's fixed literals (taken out before looking for words)."""

    value: str
    literals: tuple[str, ...] = ()
    url_password: bool = False  # the password of scheme://user:password@ (detect-secrets' Basic Auth plugin)


def _wordy_body(m: MatchedValue) -> bool:
    body = m.value
    for literal in m.literals:
        body = body.replace(literal, " ")
    return wordy(body)


MADE_UP_VALUE = Veto[MatchedValue](
    "example_value", "example, sample, dummy, xxxxxx", lambda m: _made_up_value(m.value)
)
PATTERN_RUN = Veto[MatchedValue](
    "pattern_run", "a run random characters would hardly hold", lambda m: shape.pattern_run(m.value)
)
LOW_ENTROPY = Veto[MatchedValue](
    "low_entropy", "16+ characters under 3 bits each", lambda m: _low_entropy(m.value)
)
MADE_OF_WORDS = Veto[MatchedValue](
    "made_of_words", "the random part of a token made of words (AKIALGSBKLIKEAREAL12)", _wordy_body
)
FAILS_VALIDATION = Veto[bool | None](
    "fails_validation",
    "the format's validator disproves the value: a checksum that does not match, parts that do not decode, a "
    "stand-in password word (user:password@, scott:tiger@)",
    lambda verdict: verdict is False,
)
SHORT_OR_LETTERS = Veto[MatchedValue](
    "short_and_plain", "under 8 characters, or letters only", lambda m: len(m.value) < 8 or m.value.isalpha()
)
STAND_IN_PASSWORD_WORD = Veto[MatchedValue](
    "stand_in_url_password",
    "a URL password that is a stand-in word, a template or a variable name",
    lambda m: m.url_password and (url_password_ok(m.value) is False or shape.template_or_variable(m.value)),
)
WEAK_PLUGIN_PASSWORD = Veto[MatchedValue](
    "weak_password",
    "a URL password made of the words written where a password goes, with digits",
    lambda m: m.url_password and shape.weak_password(m.value),
)
WORDS_BODY_VETOES = (MADE_UP_VALUE, PATTERN_RUN, LOW_ENTROPY)
"""For a format whose body is words by design: every random-body veto but ``MADE_OF_WORDS``."""
RANDOM_BODY_VETOES = (*WORDS_BODY_VETOES, MADE_OF_WORDS)
PLUGIN_VETOES = (SHORT_OR_LETTERS, *RANDOM_BODY_VETOES, STAND_IN_PASSWORD_WORD, WEAK_PLUGIN_PASSWORD)
