"""PII/PHI detection and masking with Presidio (``pii`` extra)."""
