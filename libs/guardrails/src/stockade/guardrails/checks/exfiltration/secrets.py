"""Find credentials in text: known key formats, high-entropy values in credential context, and (with the
``secrets`` extra) the detect-secrets plugins. Returns spans and rule names, never stores values."""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from stockade.guardrails.checks.exfiltration.key_formats import KEY_FORMATS

_CONTEXT = re.compile(
    r"(?i)(?P<key>[\w.\-]{0,40}?(?:passw(?:or)?d|passwd|pwd|secret|token|api[_\-]?key|apikey|access[_\-]?key|"
    r"auth[_\-]?key|credential|private[_\-]?key|client[_\-]?secret|salt|nonce|signature)[\w.\-]{0,20}?)"
    r"[\"']?\s*(?::=|=>|==|[:=]|\s+(?:is|was)\s+)\s*(?:[a-z]\()?[\"'`]?(?P<value>[^\s\"'`;,)<>{}\]]{4,})"
)
_PLACEHOLDER = re.compile(
    r"(?i)^(?:\$|%|\{|<|\*+$|x+$|\.\.\.|none$|null$|nil$|true$|false$|undefined$|changeme$|password$|"
    r"secret$|example|your[_\-]|placeholder|dummy|redacted|process\.env|os\.environ|getenv|config\.|self\.|this\.)"
)


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


def looks_like_credential(value: str, *, key: str, entropy_threshold: float, min_length: int) -> bool:
    if _PLACEHOLDER.search(value) or value.lower() == key.lower():
        return False
    if re.fullmatch(r"[a-z]+(?:[_\-.][a-z]+)*", value) and len(value) < 24:  # an identifier, not a value
        return False
    is_password = bool(re.search(r"(?i)pass|pwd", key))
    if is_password:
        return len(value) >= 6 and (shannon_entropy(value) >= 2.0)
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
                hits.append(SecretHit(m.start(g), m.end(g), rule, 0.95))
        for m in _CONTEXT.finditer(text):
            value, key = m.group("value"), m.group("key")
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
