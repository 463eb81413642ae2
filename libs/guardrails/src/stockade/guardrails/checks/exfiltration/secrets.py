"""Find credentials in text: known key formats, high-entropy values in credential context, and (with the
``secrets`` extra) the detect-secrets plugins. Returns spans and rule names, never stores values."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from stockade.guardrails.checks.exfiltration.context import ContextCandidate, context_candidates
from stockade.guardrails.checks.exfiltration.key_formats import KEY_FORMATS
from stockade.guardrails.checks.exfiltration.literals import REQUIRED_SUBSTRINGS
from stockade.guardrails.checks.exfiltration.plausibility import looks_fake, shannon_entropy, stand_in_value
from stockade.guardrails.checks.exfiltration.rules import CONTEXT_RULE, EXAMPLE_LINE_RULES, PAIRED_RULES
from stockade.guardrails.checks.exfiltration.token_structure import pem_body_disproves
from stockade.guardrails.checks.exfiltration.validators import VALIDATORS, url_password_ok
from stockade.guardrails.checks.exfiltration.words import wordy

_NO_FAKE_FILTER = {"private_key", "x_bearer_token", "dropbox_long_term_token", "json_web_key"}
_RULE_SCORE = {
    "uuid": 0.5,
    "otp_secret": 0.6,
    "aws_s3_bucket": 0.4,
    "firebase_domain": 0.4,
    "wechat_app_id": 0.5,
    "base36_app_secret": 0.4,
}  # a UUID is often an id, not a key (a WeChat app id is public): masked, not blocked on its own
_DATA_URI = re.compile(r"data:[\w/+.\-]+;base64,[A-Za-z0-9+/=]+")
# secrets that are random blobs alone, so are reported only next to their id (rules.PAIRED_RULES): their shape
_PAIR_SHAPES: dict[str, re.Pattern[str]] = {
    "aws_access_key_id": re.compile(r"(?<![A-Za-z0-9/+])([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"),
    "google_oauth_client_id": re.compile(r"(?<![A-Za-z0-9_\-])([A-Za-z0-9_\-]{24})(?![A-Za-z0-9_\-=.])"),
    "alibaba_access_key_id": re.compile(r"(?<![A-Za-z0-9/+])([A-Za-z0-9]{30})(?![A-Za-z0-9/+=])"),
}
_PAIR_WINDOW = 400
# formats whose matches hold words by design (key headers, URLs, host names)
_WORDS_BY_DESIGN = {
    "private_key",
    "url_credentials",
    "slack_webhook",
    "discord_webhook",
    "aws_s3_bucket",
    "firebase_domain",
    "google_oauth_client_id",
    "json_web_key",
    "uuid",  # generated, so a hex word in one (beef, cafe) is chance
}
_EXAMPLE_WORD = re.compile(r"(?i)example|\benc[(\[]")
_EXAMPLE_REACH = 64
_ENCRYPTED_PEM = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----\s*Proc-Type:\s*4,ENCRYPTED[\s\S]*?(?:-----END [A-Z0-9 ]*-----|\Z)"
)


@dataclass(frozen=True)
class SecretHit:
    start: int
    end: int
    rule: str
    score: float


class SecretScanner:
    """Scan a text for credentials. ``use_detect_secrets`` loads detect-secrets plugins (``secrets`` extra)."""

    def __init__(
        self,
        *,
        entropy_threshold: float = 3.5,
        min_token_length: int = 12,
        use_detect_secrets: bool = True,
        disabled_rules: Iterable[str] = (),
        allow_values: Iterable[str] = (),
    ) -> None:
        self.entropy_threshold = entropy_threshold
        self.min_token_length = min_token_length
        self._plugins = _detect_secrets_plugins() if use_detect_secrets else []
        self._disabled = frozenset(disabled_rules)
        self._allowed = [re.compile(p) for p in allow_values]

    def scan(self, text: str) -> list[SecretHit]:
        hits, candidates = self.candidates(text)
        hits = [
            h
            for h in hits
            if (h.rule not in EXAMPLE_LINE_RULES or not _example_line(text, h))
            and (h.rule != "google_oauth_client_id" or _google_secret_near(text, h))
        ]
        hits += [SecretHit(c.start, c.end, CONTEXT_RULE, 0.8) for c in candidates if c.accepted]
        if self._disabled or self._allowed:  # before the dedupe, so a disabled rule hides nothing under it
            hits = [h for h in hits if h.rule not in self._disabled and not self._allowed_value(text, h)]
        return _dedupe(hits)

    def _allowed_value(self, text: str, hit: SecretHit) -> bool:
        value = text[hit.start : hit.end]
        return any(p.fullmatch(value) for p in self._allowed)

    def candidates(self, text: str) -> tuple[list[SecretHit], list[ContextCandidate]]:
        """Hits of the format rules and plugins, and every credential-context candidate (accepted or not)."""
        # not secrets: images in data URIs, encrypted private keys
        excluded = [m.span() for pattern in (_DATA_URI, _ENCRYPTED_PEM) for m in pattern.finditer(text)]
        hits = [h for h in self._scan_formats(text) if not _inside(h, excluded)]
        hits += _paired_secrets(text, hits)
        if self._plugins:
            hits.extend(h for h in self._scan_plugins(text) if not _inside(h, excluded))
        candidates = list(
            context_candidates(
                text, entropy_threshold=self.entropy_threshold, min_length=self.min_token_length
            )
        )
        return hits, candidates

    def _scan_formats(self, text: str) -> list[SecretHit]:
        hits = []
        for rule, pattern in KEY_FORMATS.items():
            needed = REQUIRED_SUBSTRINGS.get(rule)
            if needed and not any(literal in text for literal in needed):
                continue
            validate = VALIDATORS.get(rule)
            for m in pattern.finditer(text):
                g = 1 if m.lastindex else 0
                value = m.group(g)
                verdict = validate(value) if validate else None
                if verdict is False:
                    continue
                if rule == "uuid" and _uuid_names_a_resource(text, m.start(g)):
                    continue
                if rule == "url_credentials" and _url_password_stands_in(text[m.start() : m.start(g)], value):
                    continue
                if rule == "private_key" and pem_body_disproves(value, text, m.end(g)):
                    continue
                if verdict or rule in _NO_FAKE_FILTER or not (looks_fake(value) or _wordy_body(rule, value)):
                    hits.append(SecretHit(m.start(g), m.end(g), rule, _RULE_SCORE.get(rule, 0.95)))
        return hits

    def _scan_plugins(self, text: str) -> list[SecretHit]:
        hits = []
        offset = 0
        for line in text.splitlines(keepends=True):
            for rule, plugin in self._plugins:
                for value in plugin.analyze_string(line):
                    if (
                        not isinstance(value, str)
                        or len(value) < 8
                        or looks_fake(value)
                        or value.isalpha()
                        or wordy(value)
                        or (
                            rule == _BASIC_AUTH_PLUGIN
                            and (url_password_ok(value) is False or stand_in_value(value))
                        )
                    ):
                        continue
                    pos = line.find(value)
                    if pos >= 0:
                        hits.append(SecretHit(offset + pos, offset + pos + len(value), rule, 0.9))
            offset += len(line)
        return hits


# a UUID given as an id ("RequestId": "...", subscription_id = ..., <Id>, itemID="{...}", 'id': 'run-...') or in
# a URL's path (an image, a page):
# it names a resource; a UUID after key=, token=, secret= in a URL, or under any other name, may be a key
_ID_NAME = re.compile(
    r"""(?:(?<=[a-z0-9])I[dD]|(?i:(?<![a-z])(?:id|uuid|guid)))(?:["'\]]*\s*(?:[:=]|=>)\s*["']?\{?(?:[a-z]{2,8}-)?|>)$"""
)
# a UUID ending a hyphenated name with a word in it (my-layer-<uuid>, create-db-cluster-<uuid>): a generated
# resource name; short prefixes (sk-lf-<uuid>) may be a key's, so they stay
_NOT_NAME = re.compile(r"[^\w\-]")
_WORD_RUN = re.compile(r"[A-Za-z]{4}")
_URL_KEY_PARAM = re.compile(r"(?i)(?:key|token|secret|pass\w*|auth\w*|sig\w*|code|session)=[\w-]*$")


def _uuid_names_a_resource(text: str, start: int) -> bool:
    line_start = text.rfind("\n", 0, start) + 1
    before = text[max(line_start, start - 80) : start]
    if _ID_NAME.search(before):
        return True
    name = _NOT_NAME.split(before)[-1]
    if name.endswith("-") and _WORD_RUN.search(name):
        return True
    token = re.split(r"[\s\"'<>()`]", before)[-1]
    return "://" in token and not _URL_KEY_PARAM.search(token)


def _url_password_stands_in(before: str, password: str) -> bool:
    """``scheme://user:password@`` whose password repeats the user name (someone:someone@, admin:admin@: a
    default), is made of words (whywouldyouusehttpforpasswords), or is a template, a variable name or a
    password-word with digits ({secret_key}, my_secret, password123): a stand-in, as CredSweeper's model judges."""
    user = before.rsplit("://", 1)[-1].rstrip(":").rsplit(":", 1)[-1]
    return password.lower() == user.lower() or wordy(password) or stand_in_value(password)


# a Google OAuth client id is public (every page with Google sign-in carries it): reported only with a client
# secret near it (GOCSPX-..., or a 24-80 character token mixing upper case, lower case and digits), as
# CredSweeper's Google Multi rule pairs them, within the 10 lines after it or the 400 characters before it
_GOOGLE_SECRET = re.compile(
    r"GOCSPX-[0-9A-Za-z_\-]{28}|(?<![\w\-.])(?=[\w\-]{0,79}[A-Z])(?=[\w\-]{0,79}[a-z])(?=[\w\-]{0,79}\d)[\w\-]{24,80}(?![\w\-.])"
)
_SECRET_MARGIN_LINES = 10


def _google_secret_near(text: str, client_id: SecretHit) -> bool:
    hi = client_id.end
    for _ in range(_SECRET_MARGIN_LINES + 1):
        nxt = text.find("\n", hi + 1)
        hi = len(text) if nxt < 0 else nxt
    lo = max(0, client_id.start - _PAIR_WINDOW)
    before, after = text[lo : client_id.start], text[client_id.end : min(hi, client_id.end + 2_000)]
    return bool(_GOOGLE_SECRET.search(before) or _GOOGLE_SECRET.search(after))


def _example_line(text: str, hit: SecretHit) -> bool:
    """The word "example" (or an ENC(...) marker) on the hit's line, within 64 characters of it."""
    line_start = text.rfind("\n", 0, hit.start) + 1
    line_end = text.find("\n", hit.end)
    line_end = len(text) if line_end < 0 else line_end
    lo, hi = max(line_start, hit.start - _EXAMPLE_REACH), min(line_end, hit.end + _EXAMPLE_REACH)
    return _EXAMPLE_WORD.search(text, lo, hi) is not None


def _wordy_body(rule: str, value: str) -> bool:
    """The random part of a token (its fixed prefix taken out) made of English words: a stand-in."""
    if rule in _WORDS_BY_DESIGN:
        return False
    for literal in REQUIRED_SUBSTRINGS.get(rule, ()):
        value = value.replace(literal, " ")
    return wordy(value)


def _paired_secrets(text: str, hits: list[SecretHit]) -> list[SecretHit]:
    """Secrets near their id (AWS secret access key near the key id, Google client secret near the client id)."""
    found: list[SecretHit] = []
    for key_id in hits:
        if key_id.rule not in _PAIR_SHAPES:
            continue
        shape, rule = _PAIR_SHAPES[key_id.rule], PAIRED_RULES[key_id.rule]
        lo, hi = max(0, key_id.start - _PAIR_WINDOW), key_id.end + _PAIR_WINDOW
        for m in shape.finditer(text, lo, hi):
            v = m.group(1)
            mixed = (
                any(c.islower() for c in v) and any(c.isupper() for c in v) and any(c.isdigit() for c in v)
            )
            if mixed and shannon_entropy(v) >= 3.8 and not looks_fake(v):
                found.append(SecretHit(m.start(1), m.end(1), rule, 0.95))
    return found


def _inside(hit: SecretHit, spans: list[tuple[int, int]]) -> bool:
    return any(a <= hit.start and hit.end <= b for a, b in spans)


def _dedupe(hits: list[SecretHit]) -> list[SecretHit]:
    """Drop hits contained in a higher-or-equal scored hit."""
    hits.sort(key=lambda h: (h.start, -(h.end - h.start), -h.score))
    kept: list[SecretHit] = []
    for h in hits:
        if any(k.start <= h.start and h.end <= k.end and k.score >= h.score for k in kept):
            continue
        kept.append(h)
    return kept


_BASIC_AUTH_PLUGIN = "detect_secrets:Basic Auth Credentials"  # the password of scheme://user:password@host
# Plugins whose regexes stand alone; entropy and keyword plugins need file context and flag prose.
_SKIP_PLUGINS = {"Base64HighEntropyString", "HexHighEntropyString", "KeywordDetector", "IPPublicDetector"}


@lru_cache(maxsize=1)
def _detect_secrets_plugins() -> list[tuple[str, Any]]:
    from stockade.guardrails.extras import require

    util = require("detect_secrets.core.plugins.util", extra="secrets", feature="detect-secrets plugins")
    plugins = []
    for secret_type, cls in sorted(util.get_mapping_from_secret_type_to_class().items()):
        if cls.__name__ in _SKIP_PLUGINS:
            continue
        plugins.append((f"detect_secrets:{secret_type}", cls()))
    return plugins
