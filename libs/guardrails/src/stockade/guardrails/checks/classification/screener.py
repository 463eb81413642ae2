"""The window screener: a linear model over hashed WordPiece unigrams and bigrams.

It costs microseconds per window (a sum of weight rows), so it can look at every window of a long document and
choose the ones the transformer reads (windows.pick_windows). It is trained beside the transformer by
``bench/train_classifier.py`` and ships with it as ``screener.npz``: ``weights`` (buckets x classes, float16),
``bias`` (classes). Its score for a window is the largest attack-class probability.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

try:  # numpy comes with the ml extra; importing this module without it must not fail
    import numpy as np
except ImportError:  # pragma: no cover - exercised only without the ml extra
    np = None  # type: ignore[assignment]

BUCKETS = 1 << 18
_PRIME = 1_000_003


def feature_ids(ids: Sequence[int]) -> np.ndarray:
    """Hashed feature indices of one window: each token id, and each adjacent pair."""
    arr = np.asarray(ids, dtype=np.int64)
    uni = arr % BUCKETS
    if len(arr) < 2:
        return uni
    bi = (arr[:-1] * _PRIME + arr[1:] + 7) % BUCKETS
    return np.concatenate([uni, bi])


class Screener:
    def __init__(self, weights: Any, bias: Any) -> None:
        self.weights = np.asarray(weights, dtype=np.float32)
        self.bias = np.asarray(bias, dtype=np.float32)

    @classmethod
    def load(cls, path: str | Path) -> Screener:
        with np.load(path) as data:
            return cls(data["weights"], data["bias"])

    def save(self, path: str | Path) -> None:
        np.savez_compressed(path, weights=self.weights.astype(np.float16), bias=self.bias)

    def attack_scores(self, windows: Sequence[Sequence[int]]) -> list[float]:
        """Per window, the largest non-benign class probability (class 0 is benign)."""
        out = []
        for ids in windows:
            feats = feature_ids(ids)
            # binary features: each hashed feature counts once per window, as in training
            logits = self.weights[np.unique(feats)].sum(axis=0) + self.bias
            logits -= logits.max()
            probs = np.exp(logits)
            probs /= probs.sum()
            out.append(float(probs[1:].max()))
        return out
