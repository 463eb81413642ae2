"""Presidio's UrlRecognizer with host names read label by label, so a scan stays linear.

Presidio's host pattern, ``[a-z0-9.\\-]{1,253}[.](?:com|edu|... 1,100 top-level domains)``, can start at every
character and, from each, backtracks over every dot in the next 253 characters with the whole domain list:
about 0.8 ms per character of ``a.a.a...``, so 100 kB of such input held the PII check for over a minute. Here
the host is up to 20 labels of up to 63 characters (RFC 1035's limit), and a host without a scheme or quote
starts only where a host can start (not inside a run of host characters). Names, context words and scores are
Presidio's; on real text the matches are the same (tests compare the two on URLs, hosts and near misses).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from stockade.guardrails.extras import require

FEATURE = "PII/PHI detection"
_HOST = r"[a-z0-9.\-]{1,253}[.]"
_LABELS = r"(?:[a-z0-9\-]{0,63}[.]){1,20}"
_HOST_START = r"(?<![a-z0-9.\-])"


def url_recognizer(language: str = "en") -> Any:
    """A drop-in for Presidio's ``UrlRecognizer`` (same name, entity, context and scores)."""
    recognizers = require("presidio_analyzer.predefined_recognizers", extra="pii", feature=FEATURE)
    presidio = require("presidio_analyzer", extra="pii", feature=FEATURE)
    return recognizers.UrlRecognizer(
        patterns=[presidio.Pattern(name, regex, score) for name, regex, score in bounded_url_patterns()],
        supported_language=language,
    )


@lru_cache(maxsize=1)
def bounded_url_patterns() -> list[tuple[str, str, float]]:
    """Presidio's URL patterns with the host read label by label (see the module docstring)."""
    recognizers = require("presidio_analyzer.predefined_recognizers", extra="pii", feature=FEATURE)
    patterns = []
    for p in recognizers.UrlRecognizer().patterns:
        if _HOST not in p.regex:
            raise RuntimeError(f"Presidio's URL pattern {p.name!r} changed; update stockade's url.py")
        regex = p.regex.replace(_HOST, _LABELS)
        if p.name == "Non schema URL":  # no scheme or quote to anchor it
            regex = regex.replace("(?i)((www", f"(?i){_HOST_START}((www", 1)
        patterns.append((p.name, regex, p.score))
    return patterns
