"""The names of the secret rules, as findings carry them: what ``secrets.disabled_rules`` may name
(``detect_secrets:<type>`` names come from the detect-secrets plugins and are not listed here)."""

from __future__ import annotations

from stockade.guardrails.checks.exfiltration.formats import FORMATS

CONTEXT_RULE = "credential_in_context"
RULE_NAMES = frozenset(f.name for f in FORMATS) | {CONTEXT_RULE}
