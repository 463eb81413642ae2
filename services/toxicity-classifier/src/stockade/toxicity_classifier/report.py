"""Held-out metrics of a model, printed beside Davidson et al.'s published figures."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from sklearn.metrics import confusion_matrix, precision_recall_fscore_support

from stockade.toxicity_classifier.model import ToxicityModel

# Davidson et al. 2017 (ICWSM), final logistic regression: the paper gives the weighted overall figures and
# the hate class's precision and recall (its model was refitted on all data).
PAPER = {"overall": (0.91, 0.90, 0.90), "toxic": (0.44, 0.61, None)}
# The authors' replication notebook (src/, "Python 3.6" version): the same model family scored on a held-out
# 10 % (2,479 tweets), per class.
NOTEBOOK = {
    "toxic": (0.44, 0.59, 0.51),
    "offensive": (0.96, 0.91, 0.93),
    "non-toxic": (0.83, 0.94, 0.88),
    "overall": (0.91, 0.89, 0.90),
}


def evaluate(model: ToxicityModel, texts: Sequence[str], y: npt.NDArray[np.int64]) -> dict[str, Any]:
    """Per-class and weighted precision / recall / F1 of ``model`` on labelled texts (class = label index)."""
    predicted = model.predict_proba(texts).argmax(axis=1)
    classes = list(range(len(model.labels)))
    p, r, f, support = precision_recall_fscore_support(y, predicted, labels=classes, zero_division=0)
    wp, wr, wf, _ = precision_recall_fscore_support(y, predicted, average="weighted", zero_division=0)
    metrics: dict[str, Any] = {
        label: {"precision": _r(p[i]), "recall": _r(r[i]), "f1": _r(f[i]), "support": int(support[i])}
        for i, label in enumerate(model.labels)
    }
    metrics["overall"] = {"precision": _r(wp), "recall": _r(wr), "f1": _r(wf), "support": len(y)}
    metrics["macro_f1"] = _r(float(np.mean(f)))
    metrics["confusion"] = confusion_matrix(y, predicted, labels=classes).tolist()
    return metrics


def _r(value: float) -> float:
    return round(float(value), 4)


def _cell(values: tuple[float | None, ...] | None, i: int) -> str:
    if values is None or values[i] is None:
        return "  -  "
    return f"{values[i]:.2f}"


def format_report(metrics: dict[str, Any], cv: dict[float, float], c: float) -> str:
    lines = [
        "C by 5-fold CV on the training part (mean macro-F1): "
        + ", ".join(f"C={k:g}: {v:.4f}" for k, v in cv.items())
        + f" -> C={c:g}",
        "",
        f"held-out split ({metrics['overall']['support']} tweets)      this model          "
        "paper (2017)        replication notebook",
        f"{'class':<12}{'support':>8}   {'P':>5} {'R':>5} {'F1':>5}    {'P':>5} {'R':>5} {'F1':>5}    "
        f"{'P':>5} {'R':>5} {'F1':>5}",
    ]
    for name in ("toxic", "offensive", "non-toxic", "overall"):
        m = metrics[name]
        ours = f"{m['precision']:.2f}  {m['recall']:.2f}  {m['f1']:.2f}"
        paper = "   ".join(_cell(PAPER.get(name), i) for i in range(3))
        notebook = "   ".join(_cell(NOTEBOOK.get(name), i) for i in range(3))
        lines.append(f"{name:<12}{m['support']:>8}   {ours}    {paper}    {notebook}")
    lines += [
        f"macro F1 {metrics['macro_f1']:.4f}; 'overall' is the support-weighted average, as in the paper.",
        "confusion (rows true, columns predicted; toxic, offensive, non-toxic): "
        + "; ".join(" ".join(str(v) for v in row) for row in metrics["confusion"]),
    ]
    return "\n".join(lines)
