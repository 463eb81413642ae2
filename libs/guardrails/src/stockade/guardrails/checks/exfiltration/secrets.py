"""Find credentials in text: known key formats, high-entropy values in credential context, and (with the
``secrets`` extra) the detect-secrets plugins. Returns spans and rule names, never stores values."""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from stockade.guardrails.checks.exfiltration.key_formats import KEY_FORMATS
from stockade.guardrails.checks.exfiltration.validators import VALIDATORS, sealed_ciphertext

_KEY_WORDS = (
    r"pass(?:wd|word|phrase)?|pwd?(?-i:(?![A-Z]))|api(?-i:(?![A-Z]))|secret|token|key|auth(?!or(?!i[sz]))\w*|credential|salt|nonce|signature|bearer|"
    r"userpwd"
)
# key = value, key: value, "key": "value", key is value, key%3Dvalue (URL-encoded); one line only
_CONTEXT = re.compile(
    rf"(?i)(?P<key>[\w.\-]{{0,40}}?(?-i:(?<![A-Za-z])|(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[a-z]))(?:{_KEY_WORDS})s?(?-i:(?![a-z]))[\w.\-]{{0,30}}?)[\"']?[ \t]*(?::=|=>|[!=]==?|[:=]|%3D|[ \t]+(?:is|was)[ \t]+)"
    r"[ \t]*(?:[a-z]{1,2}\(|[bu](?=[\"']))?[\"'`]{0,3}(?P<value>[^\s\"'`;,)<>{}\]]{4,})"
)
_KEYED = rf"[\w.\-]*?(?:{_KEY_WORDS})[\w.\-]*"
# a default in code: SECRET := getenv("X", "value"), PASSWORD = os.environ.get("X") or "value"
_ENV_DEFAULT = re.compile(
    rf"(?i)(?P<key>\b{_KEYED})[ \t]*:?=[ \t]*[\w.$]*?(?:getenv|environ\.get|env\.get|fetch|getProperty)\("
    r"[ \t]*[\"'][^\"'\n]*[\"'][ \t]*(?:,[ \t]*|\)[ \t]*(?:or|\|\||\?\?|\?:)[ \t]*)[\"'](?P<value>[^\"'\s]{4,})"
)
# a setter call: define('PASSWORD', 'value'), config.set("api_token", "value")
_CALL_PAIR = re.compile(
    rf"(?i)\b(?:define|set\w*|put\w*|add\w*)\([ \t]*[\"'](?P<key>{_KEYED})[\"'][ \t]*,[ \t]*[\"']"
    r"(?P<value>[^\"'\s]{4,})"
)
# command lines (--password X, -Password 'X') and SQL (IDENTIFIED BY X, WITH PASSWORD 'X')
_FLAG = re.compile(
    r"(?i)(?:^|\s)(?P<key>-{1,2}[\w\-]*(?:pass(?:word|phrase|wd)?|pwd|token|secret|api[_\-]?key))[ \t]+"
    r"[\"']?(?P<value>[^\s\"']{4,})"
)
_SQL = re.compile(
    r"(?i)\b(?:(?P<key>identified\s+(?:with\s+\w+\s+)?by)\s+[\"']?|(?P<key2>password)\s+[\"'])"
    r"(?P<value>[^\s\"';]{4,})"
)
# CREATE ROLE x WITH LOGIN PASSWORD value; IDENTIFIED WITH 'plugin' AS 'hash'
_SQL_WITH = re.compile(
    r"(?i)(?:\bwith\b[^;\n]{0,40}?\b(?P<key>password)[ \t]+[\"']?"
    r"|\b(?P<key2>identified\s+with)\s+[\"']?\w+[\"']?\s+as\s+[\"'])(?P<value>[^\s\"';]{4,})"
)
_XML = re.compile(
    r"(?i)<(?P<key>[\w:\-]*(?:pass\w*|secret|token|pwd|api[_\-]?key)[\w:\-]*)(?:\s[^>]*)?>(?P<value>[^<\s]{4,})</"
)
_CURL_USER = re.compile(r"(?i)\bcurl\b[^\n]*?\s(?P<key>-u|--user)\s+[\"']?[^:\s\"']+:(?P<value>[^\s\"']{4,})")
_SECURE_STRING = re.compile(r"(?i)(?P<key>ConvertTo-SecureString)\s+[\\\"']*(?P<value>[^\s\"'\\]{4,})")
_PLACEHOLDER = re.compile(
    r"(?i)^(?:\$|%|\{|<|\*+$|x+$|\.\.\.|none$|null$|nil$|true$|false$|undefined$|changeme$|password$|"
    r"secret$|example|your[_\-]|placeholder|dummy|redacted|process\.env|os\.environ|getenv|config\.|self\.|this\.|"
    r"0x[0-9a-f]+$)"
)
_FAKE = re.compile(r"(?i)example|sample|dummy|x{6,}|\*{4,}|(.)\1{5,}")
_NO_FAKE_FILTER = {"private_key", "x_bearer_token", "dropbox_long_term_token", "json_web_key"}
_RULE_SCORE = {
    "uuid": 0.5,
    "otp_secret": 0.6,
    "aws_s3_bucket": 0.4,
    "firebase_domain": 0.4,
}  # a UUID is often an id, not a key: masked, not blocked on its own
# the end of a value: the next URL query parameter or an HTML entity
_VALUE_END = re.compile(r"&(?:[\w.\-]+=|(?:amp|lt|gt|quot|#\d+);?)|%26")
_EMAIL = re.compile(r"[\w.+\-]+@[\w\-]+(?:\.[\w\-]+)*\.[A-Za-z]{2,}")
_DATA_URI = re.compile(r"data:[\w/+.\-]+;base64,[A-Za-z0-9+/=]+")
# secrets that are random blobs alone, so are reported only next to their id: key-id rule -> (shape, rule)
_PAIRED: dict[str, tuple[re.Pattern[str], str]] = {
    "aws_access_key_id": (
        re.compile(r"(?<![A-Za-z0-9/+])([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"),
        "aws_secret_access_key",
    ),
    "google_oauth_client_id": (
        re.compile(r"(?<![A-Za-z0-9_\-])([A-Za-z0-9_\-]{24})(?![A-Za-z0-9_\-=.])"),
        "google_oauth_client_secret",
    ),
}
_PAIR_WINDOW = 400
_ENCRYPTED_PEM = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----\s*Proc-Type:\s*4,ENCRYPTED")


@dataclass(frozen=True)
class SecretHit:
    start: int
    end: int
    rule: str
    score: float


def shannon_entropy(value: str) -> float:
    if not value:
        return 0.0
    counts = Counter(value)
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def has_sequence(value: str, run: int = 5) -> bool:
    """A run of ascending or descending characters (12345, abcde, 54321): a made-up value."""
    steps = [ord(b) - ord(a) for a, b in itertools.pairwise(value)]
    count = 1
    for prev, cur in itertools.pairwise(steps):
        count = count + 1 if cur == prev and cur in (1, -1) else 1
        if count >= run - 1:
            return True
    return False


def looks_fake(value: str) -> bool:
    return (
        bool(_FAKE.search(value))
        or has_sequence(value)
        or (len(value) >= 16 and shannon_entropy(value) < 3.0)
    )


def looks_like_credential(value: str, *, key: str, entropy_threshold: float, min_length: int) -> bool:
    if _PLACEHOLDER.search(value) or value.lower() == key.lower() or looks_fake(value):
        return False
    if re.fullmatch(r"[a-z]+(?:[_\-.][a-z]+)*", value) and len(value) < 24:  # an identifier, not a value
        return False
    if _EMAIL.fullmatch(value) or sealed_ciphertext(value):  # an address; an encrypted (sealed) value
        return False
    is_password = bool(re.search(r"(?i)pass|pwd|pw|secure|identified|^-u$|^--user$", key))
    if is_password:
        # real passwords mix letters with digits or symbols; plain words (EXPIRE, HISTORY) are not values
        return len(value) >= 6 and shannon_entropy(value) >= 2.0 and not value.isalpha()
    return len(value) >= min_length and shannon_entropy(value) >= entropy_threshold


class SecretScanner:
    """Scan a text for credentials. ``use_detect_secrets`` loads detect-secrets plugins (``secrets`` extra)."""

    def __init__(
        self, *, entropy_threshold: float = 3.5, min_token_length: int = 12, use_detect_secrets: bool = True
    ) -> None:
        self.entropy_threshold = entropy_threshold
        self.min_token_length = min_token_length
        self._plugins = _detect_secrets_plugins() if use_detect_secrets else []

    def scan(self, text: str) -> list[SecretHit]:
        # not secrets: images in data URIs, encrypted private keys
        excluded = [m.span() for pattern in (_DATA_URI, _ENCRYPTED_PEM) for m in pattern.finditer(text)]
        hits = [h for h in self._scan_formats(text) if not _inside(h, excluded)]
        for pattern in (
            _CONTEXT,
            _ENV_DEFAULT,
            _CALL_PAIR,
            _FLAG,
            _SQL,
            _SQL_WITH,
            _XML,
            _SECURE_STRING,
            _CURL_USER,
        ):
            for m in pattern.finditer(text):
                key = m.group("key") or (m.groupdict().get("key2") or "")
                value = _VALUE_END.split(m.group("value"), maxsplit=1)[0]
                if len(value) >= 4 and looks_like_credential(
                    value, key=key, entropy_threshold=self.entropy_threshold, min_length=self.min_token_length
                ):
                    start = m.start("value")
                    hits.append(SecretHit(start, start + len(value), "credential_in_context", 0.8))
        hits += _paired_secrets(text, hits)
        if self._plugins:
            hits.extend(h for h in self._scan_plugins(text) if not _inside(h, excluded))
        return _dedupe(hits)

    def _scan_formats(self, text: str) -> list[SecretHit]:
        hits = []
        for rule, pattern in KEY_FORMATS.items():
            validate = VALIDATORS.get(rule)
            for m in pattern.finditer(text):
                g = 1 if m.lastindex else 0
                value = m.group(g)
                verdict = validate(value) if validate else None
                if verdict is False:
                    continue
                if verdict or rule in _NO_FAKE_FILTER or not looks_fake(value):
                    hits.append(SecretHit(m.start(g), m.end(g), rule, _RULE_SCORE.get(rule, 0.95)))
        return hits

    def _scan_plugins(self, text: str) -> list[SecretHit]:
        hits = []
        offset = 0
        for line in text.splitlines(keepends=True):
            for rule, plugin in self._plugins:
                for value in plugin.analyze_string(line):
                    if not isinstance(value, str) or len(value) < 8 or looks_fake(value) or value.isalpha():
                        continue
                    pos = line.find(value)
                    if pos >= 0:
                        hits.append(SecretHit(offset + pos, offset + pos + len(value), rule, 0.9))
            offset += len(line)
        return hits


def _paired_secrets(text: str, hits: list[SecretHit]) -> list[SecretHit]:
    """Secrets near their id (AWS secret access key near the key id, Google client secret near the client id)."""
    found: list[SecretHit] = []
    for key_id in hits:
        if key_id.rule not in _PAIRED:
            continue
        shape, rule = _PAIRED[key_id.rule]
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
