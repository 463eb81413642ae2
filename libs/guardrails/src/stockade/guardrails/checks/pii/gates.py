"""Gates for the slow patterns of the PII recognizers: a cheap search that must succeed for the pattern to match.

A pattern led by a lookbehind (``(?<=MRN\\s*)...``) or by a bounded run of word characters before a suffix
(``[\\w-]{0,40}(?:strasse|...)``) is tried at every position of the text: on 20 kB of ordinary prompts the four
slowest took about 130 ms, more than all the other patterns together. Each gate is a necessary condition of
its pattern (every match of the pattern contains a match of the gate), so a text without a gate match cannot
hold a match and the pattern is not run on it; a text with one is searched by the pattern as before. The
results are the same on every text (``tests/checks/test_pii_gates.py`` checks the necessity on generated text).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from stockade.guardrails.extras import require

FEATURE = "PII/PHI detection"


class GatedRegex:
    """A compiled pattern run only on texts where ``gate`` finds something (Presidio calls ``finditer``)."""

    def __init__(self, compiled: Any, gate: Any) -> None:
        self.compiled = compiled
        self.gate = gate

    def finditer(self, text: str, *args: Any, **kwargs: Any) -> Iterator[Any]:
        if self.gate.search(text) is None:
            return iter(())
        matches: Iterator[Any] = self.compiled.finditer(text, *args, **kwargs)
        return matches

    def __getattr__(self, name: str) -> Any:
        if name in {"compiled", "gate"}:  # not set yet (a copy being made): no recursion
            raise AttributeError(name)
        return getattr(self.compiled, name)


def gate_patterns(recognizer: Any, gates: dict[str, str]) -> Any:
    """Give each pattern of ``recognizer`` named in ``gates`` its gate (a regex, compiled with the recognizer's
    flags). Presidio reuses a pattern's compiled regex while the flags it is called with are the ones it was
    compiled with, which for these recognizers (called without flags) are their ``global_regex_flags``."""
    regex = require("regex", extra="pii", feature=FEATURE)
    flags = recognizer.global_regex_flags
    names = {p.name for p in recognizer.patterns}
    unknown = set(gates) - names
    if unknown:
        raise ValueError(f"{recognizer.name} has no pattern named {sorted(unknown)}")
    for pattern in recognizer.patterns:
        if pattern.name in gates:
            pattern.compiled_regex = GatedRegex(
                regex.compile(pattern.regex, flags=flags), regex.compile(gates[pattern.name], flags=flags)
            )
            pattern.compiled_with_flags = flags
    return recognizer
