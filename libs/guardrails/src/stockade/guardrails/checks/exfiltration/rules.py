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
# formats whose documentation examples sit on a line that says so ("for example, AKIA...", "# Example: pk_test_...",
# ENC(...) for a value encrypted at rest): the word within 64 characters on the same line marks the value as an
# illustration. The families CredSweeper's general pattern group checks this way; vendor tokens with checksums
# or their own structure are judged by those instead
EXAMPLE_LINE_RULES = frozenset(
    {
        "akamai_client_token",
        "alibaba_access_key_id",
        "alibaba_access_key_secret",
        "aws_access_key_id",
        "aws_secret_access_key",
        "aws_appsync_key",
        "aws_bedrock_key",
        "aws_bedrock_short_key",
        "aws_mws_key",
        "aws_s3_bucket",
        "braintree_token",
        "defined_networking_key",
        "doppler_token",
        "firebase_domain",
        "github_fine_grained_token",
        "google_oauth_client_id",
        "google_oauth_client_secret",
        "picatic_key",
        "slack_webhook",
        "stripe_key",
    }
)
RULE_NAMES = frozenset(KEY_FORMATS) | frozenset(PAIRED_RULES.values()) | {CONTEXT_RULE}
