"""Toxicity detection through a remote text-classification service."""
