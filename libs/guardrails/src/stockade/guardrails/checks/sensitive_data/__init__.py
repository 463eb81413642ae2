"""Sensitive-data detection with a transformers token-classification model (``ml`` extra)."""
