"""Context rules of the key formats: vetoes that judge a format's match where it stands in the text (the line
calls it an example, a UUID names a resource, a URL's password is a stand-in, a client id has no secret near it,
the match sits inside a data URI or an encrypted key). A format lists the rules that apply to it
(``KeyFormat.context``); the span rules (``SPAN_VETOES``) apply to every match."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from stockade.guardrails.checks.exfiltration.plausibility import template_or_variable, weak_password
from stockade.guardrails.checks.exfiltration.token_structure import pem_body_disproves
from stockade.guardrails.checks.exfiltration.veto import Veto
from stockade.guardrails.checks.exfiltration.words import wordy

_DATA_URI = re.compile(r"data:[\w/+.\-]+;base64,[A-Za-z0-9+/=]+")
_ENCRYPTED_PEM = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----\s*Proc-Type:\s*4,ENCRYPTED[\s\S]*?(?:-----END [A-Z0-9 ]*-----|\Z)"
)


class ScannedText:
    """A text under scan, with the spans every rule may ask for computed once."""

    def __init__(self, text: str) -> None:
        self.text = text

    @cached_property
    def data_uris(self) -> list[tuple[int, int]]:
        return [m.span() for m in _DATA_URI.finditer(self.text)]

    @cached_property
    def encrypted_keys(self) -> list[tuple[int, int]]:
        return [m.span() for m in _ENCRYPTED_PEM.finditer(self.text)]


@dataclass(frozen=True)
class Placement:
    """A format's match: the value's span, where the whole match starts, and the text around it."""

    source: ScannedText
    start: int
    end: int
    match_start: int

    @property
    def text(self) -> str:
        return self.source.text

    @property
    def value(self) -> str:
        return self.source.text[self.start : self.end]


def _inside(p: Placement, spans: list[tuple[int, int]]) -> bool:
    return any(a <= p.start and p.end <= b for a, b in spans)


INSIDE_DATA_URI = Veto[Placement](
    "inside_data_uri", "part of an image or file in a data: URI", lambda p: _inside(p, p.source.data_uris)
)
INSIDE_ENCRYPTED_KEY = Veto[Placement](
    "inside_encrypted_key",
    "part of a private key encrypted at rest (Proc-Type: 4,ENCRYPTED)",
    lambda p: _inside(p, p.source.encrypted_keys),
)
SPAN_VETOES = (INSIDE_DATA_URI, INSIDE_ENCRYPTED_KEY)

# the word "example" (or an ENC(...) marker: a value encrypted at rest) within 64 characters on the same line
_EXAMPLE_WORD = re.compile(r"(?i)example|\benc[(\[]")
_EXAMPLE_REACH = 64


def _example_line(p: Placement) -> bool:
    text = p.text
    line_start = text.rfind("\n", 0, p.start) + 1
    line_end = text.find("\n", p.end)
    line_end = len(text) if line_end < 0 else line_end
    lo, hi = max(line_start, p.start - _EXAMPLE_REACH), min(line_end, p.end + _EXAMPLE_REACH)
    return _EXAMPLE_WORD.search(text, lo, hi) is not None


EXAMPLE_LINE = Veto[Placement](
    "example_line",
    'the line calls the value an example ("for example, AKIA...", "# Example: pk_test_...") or wraps it '
    "in ENC(...), within 64 characters",
    _example_line,
)

# a UUID given as an id ("RequestId": "...", subscription_id = ..., <Id>, itemID="{...}", 'id': 'run-...') or in
# a URL's path: it names a resource; a UUID after key=, token=, secret= in a URL, or under any other name, may be
# a key
_ID_NAME = re.compile(
    r"""(?:(?<=[a-z0-9])I[dD]|(?i:(?<![a-z])(?:id|uuid|guid)))(?:["'\]]*\s*(?:[:=]|=>)\s*["']?\{?(?:[a-z]{2,8}-)?|>)$"""
)
# a UUID ending a hyphenated name with a word in it (my-layer-<uuid>, create-db-cluster-<uuid>): a generated
# resource name; short prefixes (sk-lf-<uuid>) may be a key's, so they stay
_NOT_NAME = re.compile(r"[^\w\-]")
_WORD_RUN = re.compile(r"[A-Za-z]{4}")
_URL_KEY_PARAM = re.compile(r"(?i)(?:key|token|secret|pass\w*|auth\w*|sig\w*|code|session)=[\w-]*$")
_TOKEN_BREAK = re.compile(r"[\s\"'<>()`]")


def _names_a_resource(p: Placement) -> bool:
    line_start = p.text.rfind("\n", 0, p.start) + 1
    before = p.text[max(line_start, p.start - 80) : p.start]
    if _ID_NAME.search(before):
        return True
    name = _NOT_NAME.split(before)[-1]
    if name.endswith("-") and _WORD_RUN.search(name):
        return True
    token = _TOKEN_BREAK.split(before)[-1]
    return "://" in token and not _URL_KEY_PARAM.search(token)


NAMES_A_RESOURCE = Veto[Placement](
    "names_a_resource",
    "a UUID under an id name, in a URL's path, or ending a generated resource name (my-layer-<uuid>)",
    _names_a_resource,
)


def _url_user(p: Placement) -> str:
    before = p.text[p.match_start : p.start]
    return before.rsplit("://", 1)[-1].rstrip(":").rsplit(":", 1)[-1]


STAND_IN_URL_PASSWORD = Veto[Placement](
    "stand_in_url_password",
    "scheme://user:password@ whose password repeats the user (admin:admin@), is made of words, or is a "
    "template or a variable name ({secret_key}, my_secret)",
    lambda p: p.value.lower() == _url_user(p).lower() or wordy(p.value) or template_or_variable(p.value),
)
WEAK_URL_PASSWORD = Veto[Placement](
    "weak_password",
    "a URL password made of the words written where a password goes, with digits (user:password123@)",
    lambda p: weak_password(p.value),
)

NOT_A_KEY_BODY = Veto[Placement](
    "not_a_key_body",
    "a PEM private-key header whose complete, clean base64 body is no key (not a DER SEQUENCE filling it, not "
    "openssh-key-v1)",
    lambda p: pem_body_disproves(p.value, p.text, p.end),
)

# a Google OAuth client id is public (every page with Google sign-in carries it): reported only with a client
# secret near it (GOCSPX-..., or a 24-80 character token mixing upper case, lower case and digits) within the 10
# lines after it or the 400 characters before it
_GOOGLE_SECRET = re.compile(
    r"GOCSPX-[0-9A-Za-z_\-]{28}|(?<![\w\-.])(?=[\w\-]{0,79}[A-Z])(?=[\w\-]{0,79}[a-z])(?=[\w\-]{0,79}\d)[\w\-]{24,80}(?![\w\-.])"
)
_SECRET_MARGIN_LINES = 10
PAIR_WINDOW = 400  # how far before or after its id a paired secret is looked for


def _no_client_secret_near(p: Placement) -> bool:
    hi = p.end
    for _ in range(_SECRET_MARGIN_LINES + 1):
        nxt = p.text.find("\n", hi + 1)
        hi = len(p.text) if nxt < 0 else nxt
    lo = max(0, p.start - PAIR_WINDOW)
    before, after = p.text[lo : p.start], p.text[p.end : min(hi, p.end + 2_000)]
    return not (_GOOGLE_SECRET.search(before) or _GOOGLE_SECRET.search(after))


NO_CLIENT_SECRET_NEAR = Veto[Placement](
    "no_client_secret_near",
    "a public OAuth client id with no client secret within 10 lines after it or 400 characters before it",
    _no_client_secret_near,
)
PLACEMENT_VETOES = (
    *SPAN_VETOES,
    EXAMPLE_LINE,
    NAMES_A_RESOURCE,
    STAND_IN_URL_PASSWORD,
    WEAK_URL_PASSWORD,
    NOT_A_KEY_BODY,
    NO_CLIENT_SECRET_NEAR,
)
