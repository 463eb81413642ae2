"""The lexical view: a linear model over hashed character n-grams and word pairs of the text itself.

The encoder reads English WordPieces and averages a 64-token window, so a phrase in another script, or a short
instruction inside ordinary prose, is diluted. This view reads any script character by character and keeps a
phrase's weight whatever surrounds it. It scores overlapping chunks of the normalised text (NFKC, lower case,
whitespace collapsed); a chunk's features are its character 3-, 4- and 5-grams and its word unigrams and
bigrams, hashed into ``BUCKETS`` buckets (each counted once per chunk). Hashing is a fixed polynomial over code
points, the same in training (``bench/lexical_view.py``) and here; numpy only, microseconds per chunk.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import Any

try:  # numpy comes with the ml extra; importing this module without it must not fail
    import numpy as np
except ImportError:  # pragma: no cover - exercised only without the ml extra
    np = None  # type: ignore[assignment]

BITS = 20
BUCKETS = 1 << BITS
CHUNK = 320  # characters per chunk, about one 64-token window of English
STRIDE = 240
MAX_CHUNKS = 512  # a 120 kB text; beyond it the chunks are spread evenly over the text
_GRAMS = (3, 4, 5)
_PRIME = 1_000_003
_MIX = 0x9E3779B97F4A7C15
_WORD = re.compile(r"\w+")
_CLIP = 1e-6  # the encoder's attack probability is clipped to [_CLIP, 1 - _CLIP] before its logit
_SPACE = re.compile(r"\s+")


def normalise(text: str) -> str:
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text).lower()).strip()


def chunks(text: str) -> list[str]:
    """Overlapping chunks of the normalised text (at least one, possibly empty)."""
    s = normalise(text)
    if len(s) <= CHUNK:
        return [s]
    starts = list(range(0, len(s) - CHUNK + STRIDE, STRIDE))
    if len(starts) > MAX_CHUNKS:
        starts = [starts[int(k)] for k in np.linspace(0, len(starts) - 1, MAX_CHUNKS)]
    return [s[a : a + CHUNK] for a in starts]


def _bucket(h: np.ndarray) -> np.ndarray:
    return ((h * np.uint64(_MIX)) >> np.uint64(64 - BITS)).astype(np.int64)


_INVERSE = pow(_PRIME, -1, 1 << 64)  # the prime is odd, so it has an inverse modulo 2**64


def _prefix(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Prefix sums S of codes[i] * P**i and the inverse powers P**-i (all modulo 2**64: uint64 arithmetic
    wraps, which is what a hash wants), so that the hash of any run [a, b) is (S[b] - S[a]) * P**-a."""
    n = len(codes)
    pw = np.empty(n + 1, dtype=np.uint64)
    pw[0] = 1
    pw[1:] = _PRIME
    pw = np.cumprod(pw, dtype=np.uint64)
    inv = np.empty(n + 1, dtype=np.uint64)
    inv[0] = 1
    inv[1:] = _INVERSE
    inv = np.cumprod(inv, dtype=np.uint64)
    s = np.zeros(n + 1, dtype=np.uint64)
    s[1:] = np.cumsum(codes * pw[:n], dtype=np.uint64)
    return s, inv


def _runs(s: np.ndarray, inv: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out: np.ndarray = (s[b] - s[a]) * inv[a]
    return out


def feature_ids(chunk: str) -> np.ndarray:
    """The distinct hashed features of one normalised chunk."""
    padded = f" {chunk} "
    codes = np.frombuffer(padded.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    sums, inv = _prefix(codes)
    parts = []
    for n in _GRAMS:
        if len(codes) >= n:
            a = np.arange(len(codes) - n + 1)
            parts.append(_runs(sums, inv, a, a + n) ^ np.uint64(n))
    spans = [m.span() for m in _WORD.finditer(padded)]
    if spans:
        ab = np.array(spans, dtype=np.int64)
        wh = _runs(sums, inv, ab[:, 0], ab[:, 1]) ^ np.uint64(0xA5A5A5A5)
        parts.append(wh)
        if len(wh) > 1:
            parts.append(wh[:-1] * np.uint64(_PRIME) + wh[1:] + np.uint64(0x5A5A))
    if not parts:
        return np.zeros(0, dtype=np.int64)
    return np.unique(_bucket(np.concatenate(parts)))


class LexicalModel:
    """``weights`` (BUCKETS,) and ``bias``: the logit of "this chunk is an attack of some kind"."""

    def __init__(self, weights: Any, bias: float) -> None:
        self.weights = np.asarray(weights, dtype=np.float32)
        self.bias = float(bias)

    @classmethod
    def load(cls, path: str | Path) -> LexicalModel:
        with np.load(path) as data:
            return cls(data["weights"], float(data["bias"]))

    def save(self, path: str | Path) -> None:
        np.savez_compressed(path, weights=self.weights.astype(np.float16), bias=np.float32(self.bias))

    def logits(self, parts: Sequence[str]) -> np.ndarray:
        return np.array([self.weights[feature_ids(c)].sum() + self.bias for c in parts], dtype=np.float64)

    def attack_scores(self, parts: Sequence[str]) -> list[float]:
        return [float(x) for x in _sigmoid(self.logits(parts))]


def _sigmoid(z: np.ndarray) -> np.ndarray:
    out: np.ndarray = 1.0 / (1.0 + np.exp(-np.clip(z, -500.0, 500.0)))  # no overflow on any text
    return out


def stack(view: LexicalModel, weight: float, probs: Any, texts: Sequence[str], benign: int) -> Any:
    """Each row's attack probability ``a = 1 - P(benign)`` moved to ``sigmoid(logit(a) + weight * z)``, ``z`` the
    view's logit for the row's text (its most suspicious chunk); the attack classes keep their proportions, so the
    kind reported is the encoder's."""
    z = np.array([view.logits(chunks(t)).max() for t in texts])
    attack = np.clip(1.0 - np.asarray(probs, dtype=np.float64)[:, benign], _CLIP, 1.0 - _CLIP)
    stacked = _sigmoid(np.log(attack / (1.0 - attack)) + weight * z)
    out = np.array(probs, dtype=np.float64)
    cols = [k for k in range(out.shape[1]) if k != benign]
    total = out[:, cols].sum(axis=1, keepdims=True)
    # each attack class's share of the attack mass (even shares where the encoder gave them none at all)
    share = np.where(total > 0, out[:, cols] / np.where(total > 0, total, 1.0), 1.0 / len(cols))
    out[:, cols] = share * stacked[:, None]
    out[:, benign] = 1.0 - stacked
    return out


def fit_lexical(texts: Sequence[str], labels: Any, weights: Any, c: float = 1.0) -> LexicalModel:
    """Logistic regression on the chunks' binary features (scikit-learn: a training-time dependency only)."""
    from scipy.sparse import csr_matrix
    from sklearn.linear_model import LogisticRegression

    rows = [feature_ids(t) for t in texts]
    indptr = np.cumsum([0, *map(len, rows)])
    matrix = csr_matrix(
        (np.ones(indptr[-1], dtype=np.float32), np.concatenate(rows), indptr), (len(rows), BUCKETS)
    )
    w = np.asarray(weights, dtype=np.float64)
    w = w * (len(w) / w.sum())
    clf = LogisticRegression(C=c, max_iter=400)
    clf.fit(matrix, np.asarray(labels), sample_weight=w)
    return LexicalModel(clf.coef_[0], float(clf.intercept_[0]))
