"""The decision head: how much a window is an attack at all, from the classifier's own forward pass.

The shipped classifier learnt words such as "instructions", "prompt", "rules" and "mode" as signs of attack, so
an ordinary request like "write instructions for setting up a virtual environment" scored as high as "ignore all
previous instructions". The head is a logistic regression over two things the same forward pass already
computes: the mean of the model's fifth encoder layer over the window (the layer below the fine-tuned one; the
model's ``hidden5`` output) and the log of the four class probabilities. It was fitted by
``bench/fit_decision_head.py`` on the training sources with every source weighted equally, plus templated
attacks and hard negatives written from the same words (bench/synth_textbook.py), and measured on sources it
never saw (README). ``head.npz`` in the model directory: ``weights`` (388), ``bias`` (1).

Its probability replaces ``1 - P(benign)`` as the window's attack score; the attack classes keep their
proportions, so the most likely kind is the classifier's. Without ``head.npz`` (or without the ``hidden5``
output) the classifier's probabilities are used as they are.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

EMBEDDING_OUTPUT = "hidden5"


class DecisionHead:
    def __init__(self, weights: Any, bias: Any) -> None:
        import numpy as np

        self.weights = np.asarray(weights, dtype=np.float32)
        self.bias = float(np.asarray(bias, dtype=np.float32).reshape(-1)[0])

    @classmethod
    def load(cls, path: Path) -> DecisionHead | None:
        """The head in ``path``, or None when the model directory has none."""
        import numpy as np

        if not path.exists():
            return None
        with np.load(path) as data:
            return cls(data["weights"], data["bias"])

    def apply(self, probs: Any, hidden: Any, mask: Any) -> Any:
        """``probs`` (windows x [benign, attacks...]) with each window's benign column set to 1 - the head's
        attack probability and the attack columns scaled to sum to it."""
        import numpy as np

        p = np.asarray(probs, dtype=np.float64)
        x = np.hstack([pooled(hidden, mask), np.log(p + 1e-6)])
        attack = 1.0 / (1.0 + np.exp(-(x @ self.weights + self.bias)))
        out = np.empty_like(p)
        out[:, 0] = 1.0 - attack
        share = p[:, 1:] / np.maximum(p[:, 1:].sum(axis=1, keepdims=True), 1e-12)
        out[:, 1:] = share * attack[:, None]
        return out


def pooled(hidden: Any, mask: Any) -> Any:
    """Unit-length mean of ``hidden`` (windows x tokens x width) over each window's real tokens."""
    import numpy as np

    m = np.asarray(mask)[:, :, None].astype(np.float32)
    out = (np.asarray(hidden) * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1.0)
    return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)
