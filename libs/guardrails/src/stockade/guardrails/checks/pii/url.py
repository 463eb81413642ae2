"""Presidio's UrlRecognizer with host names read label by label, so a scan stays linear.

Presidio's host pattern, ``[a-z0-9.\\-]{1,253}[.](?:com|edu|... 1,100 top-level domains)``, can start at every
character and, from each, backtracks over every dot in the next 253 characters with the whole domain list:
about 0.8 ms per character of ``a.a.a...``, so 100 kB of such input held the PII check for over a minute. Here
the host is up to 20 labels of up to 63 characters (RFC 1035's limit), and a host without a scheme or quote
starts only where a host can start (not inside a run of host characters). Names, context words and scores are
Presidio's.

Three corrections, so that code, paths and logs are not URLs (a test lists them beside Presidio's matches):
the top-level domain must end the host (``db.internal`` held ``db.in``, ``self.restkey`` held ``self.re``);
a host without a scheme does not start after ``/``, ``\\``, ``_``, ``$``, ``@`` or ``~`` (``app/main.py``,
``aws_s3_bucket.reports.id``; an e-mail address is the e-mail recognizer's); and a bare ``name.ext`` whose
extension is a common file type that is also a top-level domain (``main.py``, ``README.md``, ``lib.rs``,
``build.sh``, ``model.pt``) is a file name, not a host.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from stockade.guardrails.extras import require

FEATURE = "PII/PHI detection"
_HOST = r"[a-z0-9.\-]{1,253}[.]"
_LABELS = r"(?:[a-z0-9\-]{0,63}[.]){1,20}"
_HOST_START = r"(?<![a-z0-9.\-_/\\$@~])"
_LAST_TLD = "(?:zw))"
_TLD_END = r"(?![a-z0-9_\-])"
# file extensions that are also top-level domains in Presidio's list
FILE_EXTENSIONS = frozenset(
    ["cab", "cc", "fish", "md", "mk", "mov", "pm", "properties", "pt", "pub", "py", "rs", "sh", "so", "tf"]
)
_FILE_NAME = re.compile(r"[\w\-]+\.(?:" + "|".join(sorted(FILE_EXTENSIONS)) + r")", re.IGNORECASE)


def url_recognizer(language: str = "en") -> Any:
    """A drop-in for Presidio's ``UrlRecognizer`` (same name, entity, context and scores)."""
    presidio = require("presidio_analyzer", extra="pii", feature=FEATURE)
    return _recognizer_class()(
        patterns=[presidio.Pattern(name, regex, score) for name, regex, score in bounded_url_patterns()],
        supported_language=language,
    )


def file_name(match: str) -> bool:
    """Whether a URL match is a bare ``name.ext`` with a file-type extension (quotes around it allowed)."""
    return _FILE_NAME.fullmatch(match.strip("\"'")) is not None


@lru_cache(maxsize=1)
def _recognizer_class() -> Any:
    recognizers = require("presidio_analyzer.predefined_recognizers", extra="pii", feature=FEATURE)
    base: Any = recognizers.UrlRecognizer

    class FileAwareUrlRecognizer(base):  # type: ignore[misc]
        def invalidate_result(self, pattern_text: str) -> bool:
            return file_name(pattern_text)

    return FileAwareUrlRecognizer


@lru_cache(maxsize=1)
def bounded_url_patterns() -> list[tuple[str, str, float]]:
    """Presidio's URL patterns with the host read label by label and the corrections of the module docstring."""
    recognizers = require("presidio_analyzer.predefined_recognizers", extra="pii", feature=FEATURE)
    patterns = []
    for p in recognizers.UrlRecognizer().patterns:
        if _HOST not in p.regex or _LAST_TLD not in p.regex:
            raise RuntimeError(f"Presidio's URL pattern {p.name!r} changed; update stockade's url.py")
        regex = p.regex.replace(_HOST, _LABELS).replace(_LAST_TLD, _LAST_TLD + _TLD_END, 1)
        if p.name == "Non schema URL":  # no scheme or quote to anchor it
            regex = regex.replace("(?i)((www", f"(?i){_HOST_START}((www", 1)
        patterns.append((p.name, regex, p.score))
    return patterns
