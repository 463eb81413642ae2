"""The files of the trained attack classifier that stockade-guardrails' content classification loads by default.

Rebuilt by ``bench/train_classifier.py`` in the Stockade repository; see this package's README for the data,
the licences and the figures.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["model_dir"]


def model_dir() -> Path:
    """The directory holding model.onnx, tokenizer.json, screener.npz and classifier.json."""
    return Path(__file__).resolve().parent
