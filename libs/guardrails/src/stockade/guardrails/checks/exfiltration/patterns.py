"""Abnormal output patterns and bulk personal data, found with regular expressions (no model needed)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlsplit

from stockade.guardrails.checks.exfiltration.config import AbnormalPatternsConfig
from stockade.guardrails.checks.pii.phi_checksums import luhn_valid

_BASE64 = re.compile(r"[A-Za-z0-9+/]{16,}={0,2}|[A-Za-z0-9_\-]{16,}={0,2}")
_HEX = re.compile(r"\b(?:0x)?[0-9a-fA-F]{16,}\b")
# lengths are bounded so that a scan stays linear on adversarial output ("![![![...", "a.a.a.a..."): alt text and
# title up to 1,000 characters; an address's local part up to 64 and each domain label up to 63 (RFC 5321)
_MD_IMAGE = re.compile(r"!\[[^\]\n]{0,1000}\]\(\s*<?(https?://[^\s)>]+)>?[^)]{0,1000}\)")
_URL = re.compile(r"https?://[^\s<>\"')\]]+")

_BULK = {
    "EMAIL_ADDRESS": re.compile(r"\b[\w.+\-]{1,64}@[\w\-]{1,63}(?:\.[\w\-]{1,63}){1,8}\b"),
    "PHONE_NUMBER": re.compile(r"(?<![\w+])(?:\+?\d{1,3}[\s.\-]?)?\(?\d{3}\)?[\s.\-]\d{3}[\s.\-]\d{4}\b"),
    "US_SSN": re.compile(r"\b\d{3}-\d{2}-\d{4}\b"),
    "CREDIT_CARD": re.compile(r"\b(?:\d[ \-]?){13,19}\b"),
    "IBAN_CODE": re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){3,7}(?: ?[A-Z0-9]{1,3})?\b"),
    "IP_ADDRESS": re.compile(r"\b(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)\b"),
}


@dataclass(frozen=True)
class PatternHit:
    start: int
    end: int
    type: str
    score: float


def luhn_ok(digits: str) -> bool:
    """A card number: 12 or more digits (separators ignored) with a valid Luhn check digit."""
    nums = "".join(c for c in digits if c.isdigit())
    return len(nums) >= 12 and luhn_valid(nums)


def find_bulk_pii(text: str) -> list[PatternHit]:
    hits = []
    for kind, pattern in _BULK.items():
        for m in pattern.finditer(text):
            if kind == "CREDIT_CARD" and not luhn_ok(m.group()):
                continue
            hits.append(PatternHit(m.start(), m.end(), kind, 0.6))
    return hits


def find_abnormal(text: str, cfg: AbnormalPatternsConfig) -> list[PatternHit]:
    hits: list[PatternHit] = []
    for m in _BASE64.finditer(text):
        blob = m.group()
        if len(blob) >= cfg.base64_min_length and _mixed(blob):
            hits.append(PatternHit(m.start(), m.end(), "base64_blob", 0.6))
    for m in _HEX.finditer(text):
        if len(m.group()) >= cfg.hex_min_length:
            hits.append(PatternHit(m.start(), m.end(), "hex_blob", 0.5))
    image_spans = set()
    for m in _MD_IMAGE.finditer(text):
        image_spans.add(m.start(1))
        if _carries_data(m.group(1), cfg.url_param_min_length):
            hits.append(PatternHit(m.start(), m.end(), "markdown_image_exfiltration", 0.9))
    for m in _URL.finditer(text):
        if m.start() not in image_spans and _carries_data(m.group(), cfg.url_param_min_length):
            hits.append(PatternHit(m.start(), m.end(), "data_in_url", 0.6))
    if len(text) > cfg.max_output_chars:
        hits.append(PatternHit(0, 0, "unusually_long_output", 0.35))
    return hits


def _mixed(blob: str) -> bool:
    """Looks encoded rather than a long word or path: upper, lower and digits all present."""
    return (
        any(c.isupper() for c in blob) and any(c.islower() for c in blob) and any(c.isdigit() for c in blob)
    )


def _carries_data(url: str, limit: int) -> bool:
    parts = urlsplit(url)
    values = [v for _, v in parse_qsl(parts.query, keep_blank_values=True)]
    segments = [s for s in parts.path.split("/") if s]
    longest = max((len(v) for v in [*values, *segments[-1:], parts.fragment]), default=0)
    return longest >= limit or len(parts.query) >= 2 * limit
