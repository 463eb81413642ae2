"""Data exfiltration detection (output only): secrets, bulk personal data, abnormal output patterns."""
