"""detect-secrets' regex plugins (the ``secrets`` extra), run line by line; a value they report passes the same
made-up-value vetoes as a key format's."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from stockade.guardrails.checks.exfiltration.value_vetoes import MatchedValue
from stockade.guardrails.checks.exfiltration.veto import Veto, first_veto

BASIC_AUTH_PLUGIN = "detect_secrets:Basic Auth Credentials"  # the password of scheme://user:password@host
# Plugins whose regexes stand alone; entropy and keyword plugins need file context and flag prose.
_SKIP_PLUGINS = {"Base64HighEntropyString", "HexHighEntropyString", "KeywordDetector", "IPPublicDetector"}

# (rule, start, end) of a value found; (rule, start, end, veto name) of a value vetoed
Found = Callable[[str, int, int], None]
Vetoed = Callable[[str, int, int, str], None]


@lru_cache(maxsize=1)
def detect_secrets_plugins() -> list[tuple[str, Any]]:
    from stockade.guardrails.extras import require

    util = require("detect_secrets.core.plugins.util", extra="secrets", feature="detect-secrets plugins")
    plugins = []
    for secret_type, cls in sorted(util.get_mapping_from_secret_type_to_class().items()):
        if cls.__name__ in _SKIP_PLUGINS:
            continue
        plugins.append((f"detect_secrets:{secret_type}", cls()))
    return plugins


def scan_plugins(
    text: str,
    plugins: Sequence[tuple[str, Any]],
    vetoes: Sequence[Veto[MatchedValue]],
    found: Found,
    vetoed: Vetoed,
) -> None:
    offset = 0
    for line in text.splitlines(keepends=True):
        for rule, plugin in plugins:
            for value in plugin.analyze_string(line):
                if not isinstance(value, str):
                    continue
                pos = line.find(value)
                start = offset + max(pos, 0)
                veto = first_veto(vetoes, MatchedValue(value, url_password=rule == BASIC_AUTH_PLUGIN))
                if veto is not None:
                    vetoed(rule, start, start + len(value), veto.name)
                elif pos >= 0:
                    found(rule, start, start + len(value))
        offset += len(line)
