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

_KEY_WORDS = r"pass(?:wd|word|phrase)?|pwd|pw|secret|token|api|key|auth\w*|credential|salt|nonce|signature|bearer|userpwd"
# key = value, key: value, "key": "value", key is value
_CONTEXT = re.compile(
    rf"(?i)(?P<key>[\w.\-]{{0,40}}?(?-i:(?<![A-Za-z])|(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[a-z]))(?:{_KEY_WORDS})(?-i:(?![a-z]))[\w.\-]{{0,20}}?)[\"']?\s*(?::=|=>|[!=]==?|[:=]|\s+(?:is|was)\s+)"
    r"\s*(?:[a-z]{1,2}\(|[bu])?[\"'`]?(?P<value>[^\s\"'`;,)<>{}\]]{4,})"
)
# command lines (--password X, -Password 'X') and SQL (IDENTIFIED BY X, WITH PASSWORD 'X')
_FLAG = re.compile(
    r"(?i)(?:^|\s)(?P<key>-{1,2}[\w\-]*(?:pass(?:word|phrase|wd)?|pwd|token|secret|api[_\-]?key))\s+"
    r"[\"']?(?P<value>[^\s\"']{4,})"
)
_SQL = re.compile(
    r"(?i)\b(?:(?P<key>identified\s+(?:with\s+\w+\s+)?by)\s+[\"']?|(?P<key2>password)\s+[\"'])"
    r"(?P<value>[^\s\"';]{4,})"
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
_NO_FAKE_FILTER = {"private_key", "x_bearer_token", "dropbox_long_term_token"}


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
        hits: list[SecretHit] = []
        for rule, pattern in KEY_FORMATS.items():
            for m in pattern.finditer(text):
                g = 1 if m.lastindex else 0
                if rule in _NO_FAKE_FILTER or not looks_fake(m.group(g)):
                    hits.append(SecretHit(m.start(g), m.end(g), rule, 0.95))
        for pattern in (_CONTEXT, _FLAG, _SQL, _XML, _SECURE_STRING, _CURL_USER):
            for m in pattern.finditer(text):
                value, key = m.group("value"), m.group("key") or m.group("key2") or ""
                if looks_like_credential(
                    value, key=key, entropy_threshold=self.entropy_threshold, min_length=self.min_token_length
                ):
                    hits.append(SecretHit(m.start("value"), m.end("value"), "credential_in_context", 0.8))
        if self._plugins:
            hits.extend(self._scan_plugins(text))
        return _dedupe(hits)

    def _scan_plugins(self, text: str) -> list[SecretHit]:
        hits = []
        offset = 0
        for line in text.splitlines(keepends=True):
            for rule, plugin in self._plugins:
                for value in plugin.analyze_string(line):
                    if not isinstance(value, str) or len(value) < 8:
                        continue
                    pos = line.find(value)
                    if pos >= 0:
                        hits.append(SecretHit(offset + pos, offset + pos + len(value), rule, 0.9))
            offset += len(line)
        return hits


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
