"""What the model check needs of a classifier, and the backends besides the shipped one.

A backend scores a text per class (``benign``, ``injection``, ``jailbreak``, ``malicious``) as
:class:`~stockade.guardrails.checks.classification.model.Scores`: each class's best score over the text's
windows and that window's character span. The shipped classifier (model.py) is one; ``model_path`` loads any
Hugging Face sequence-classification directory (hf_model.py) and ``remote`` asks a service (remote.py). A
foreign model's labels reach our classes through a label map; several labels of one class add up.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from stockade.guardrails.checks.classification.backend_config import DEFAULT_LABEL_MAP
from stockade.guardrails.checks.classification.class_scores import TYPED_ATTACK, window_scores
from stockade.guardrails.checks.classification.model import Scores
from stockade.guardrails.errors import CheckUnavailableError

CLASS_ORDER: tuple[str, ...] = ("benign", "injection", "jailbreak", "malicious")
DEFAULT_THRESHOLD = 0.5


class ClassifierBackend(Protocol):
    """The classifier behind the model check."""

    @property
    def default_thresholds(self) -> dict[str, float]: ...

    def score(self, text: str, *, max_windows: int, model_windows: int | None = None) -> Scores: ...


def label_classes(
    labels: Sequence[str], configured: Mapping[str, str], shipped: Mapping[str, str], where: str
) -> list[str]:
    """The class of each model label: ``configured`` first, then ``shipped`` (the model directory's own map),
    then :data:`DEFAULT_LABEL_MAP`, all compared case-insensitively. An unmapped label, or no benign label,
    is an error naming ``where`` (the setting to fix)."""
    tables = [{k.lower(): v for k, v in t.items()} for t in (configured, shipped, DEFAULT_LABEL_MAP)]
    out = []
    for label in labels:
        cls = next((t[label.lower()] for t in tables if label.lower() in t), None)
        if cls is None or cls not in CLASS_ORDER:
            raise CheckUnavailableError(
                f"{where}: the model's label {label!r} has no class; map it to benign, injection, jailbreak "
                "or malicious"
            )
        out.append(cls)
    if "benign" not in out:
        raise CheckUnavailableError(f"{where}: no label of {list(labels)} maps to benign")
    return out


def class_matrix(label_probs: Any, classes: Sequence[str]) -> Any:
    """Per window (rows), the probability of each class of :data:`CLASS_ORDER`: the sum over its labels."""
    import numpy as np

    out = np.zeros((label_probs.shape[0], len(CLASS_ORDER)), dtype=np.float64)
    for j, cls in enumerate(classes):
        out[:, CLASS_ORDER.index(cls)] += label_probs[:, j]
    return out


def best_over_windows(
    matrix: Any, spans: Sequence[tuple[int, int]], windows: int, rule: str = TYPED_ATTACK
) -> Scores:
    """Apply the window rule (typed-attack: a window's 1 - P(benign) goes to its most likely attack class),
    then keep each class's best window and its span."""
    scored = window_scores(matrix, list(CLASS_ORDER), rule)
    best = scored.argmax(axis=0)
    probs = {cls: float(scored[int(best[k]), k]) for k, cls in enumerate(CLASS_ORDER)}
    where = {cls: spans[int(best[k])] for k, cls in enumerate(CLASS_ORDER)}
    return Scores(probs, where, windows, len(spans))
