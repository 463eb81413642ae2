"""Which classifier backend a configuration names (see backends.py)."""

from __future__ import annotations

from stockade.guardrails.checks.classification.backends import ClassifierBackend
from stockade.guardrails.checks.classification.config import ClassificationConfig


def load_backend(config: ClassificationConfig) -> ClassifierBackend | None:
    """The backend ``config`` names (``remote`` or ``model_path``), or None for the shipped classifier layout
    (``classifier_path`` or the model package)."""
    if config.remote is not None:
        from stockade.guardrails.checks.classification.remote import RemoteClassifier

        return RemoteClassifier(config.remote)
    if config.model_path:
        from stockade.guardrails.checks.classification.hf_model import load_sequence_classifier

        return load_sequence_classifier(
            config.model_path, tuple(sorted(config.label_map.items())), config.threads
        )
    return None
