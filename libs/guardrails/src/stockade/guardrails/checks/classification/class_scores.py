"""A window's score per class under a model's rule (``rule`` in its classifier.json)."""

from __future__ import annotations

from typing import Any

CLASS_PROBABILITY, TYPED_ATTACK = "class-probability", "typed-attack"
RULES = (CLASS_PROBABILITY, TYPED_ATTACK)


def window_scores(probs: Any, labels: list[str], rule: str) -> Any:
    """Each window's score per class (rows: windows), before the maximum over windows.

    The model directory's ``classifier.json`` names its ``rule`` (absent: class-probability, as in the model
    shipped today). ``class-probability``: the class's own probability. ``typed-attack``: a window
    scores the probability that it is an attack of any kind, 1 - P(benign), and gives it to its most probable
    attack class only (the others score 0 there). Sources disagree on where injection ends and jailbreak
    begins ("ignore previous instructions" is one in some and the other in others), so the model often splits
    a clear attack between the two, each under its threshold; the sum says "attack" and the larger part says
    which. The benign column keeps P(benign)."""
    import numpy as np

    if rule == CLASS_PROBABILITY:
        return probs
    benign = labels.index("benign")
    attack_cols = [k for k in range(len(labels)) if k != benign]
    out = np.zeros_like(probs)
    out[:, benign] = probs[:, benign]
    top = np.asarray(attack_cols)[probs[:, attack_cols].argmax(axis=1)]
    out[np.arange(len(probs)), top] = 1.0 - probs[:, benign]
    return out
