"""The names of the secret rules, as findings carry them: what ``secrets.disabled_rules`` may name
(``detect_secrets:<type>`` names come from the detect-secrets plugins and are not listed here)."""

from __future__ import annotations

from stockade.guardrails.checks.exfiltration.key_formats import KEY_FORMATS

CONTEXT_RULE = "credential_in_context"
# secrets reported only next to their id: the id's rule -> the secret's rule
PAIRED_RULES = {
    "aws_access_key_id": "aws_secret_access_key",
    "google_oauth_client_id": "google_oauth_client_secret",
    "alibaba_access_key_id": "alibaba_access_key_secret",
}
RULE_NAMES = frozenset(KEY_FORMATS) | frozenset(PAIRED_RULES.values()) | {CONTEXT_RULE}
