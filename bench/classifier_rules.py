"""Decision rules compared on the out-of-fold scores of a cross-source run (no retraining; not a timed test).

bench/train_classifier.py keeps every scored text's source, label and class probabilities (``oof_rows``); each
was scored by a model that never saw its source. This prints, per held-out source, attack recall and benign
false-positive rate for: the most probable class with no threshold (argmax), and per-class thresholds or one
"any attack" threshold on 1 - P(benign) at several held-out benign budgets (each benign source weighted the
same, as train_classifier.choose_thresholds does).

    .venv/bin/python bench/classifier_rules.py [REPORT] [--budgets 0.02 0.05 0.08 0.12]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

import numpy as np

REPORT = Path("/tmp/stockade-bench/classifier_eval.json")


def threshold(scores: np.ndarray, sources: np.ndarray, budget: float) -> float:
    """The lowest threshold whose source-weighted false-positive rate on ``scores`` (benign) is <= budget."""
    counts = Counter(sources.tolist())
    weights = np.array([1.0 / counts[s] for s in sources])
    weights /= weights.sum()
    order = np.argsort(-scores)
    cut = int(np.searchsorted(np.cumsum(weights[order]), budget, side="right"))
    return float(scores[order[cut]]) + 1e-6 if cut < len(scores) else 0.5


def per_source(fired: np.ndarray, sources: np.ndarray, benign: np.ndarray) -> tuple[dict, dict]:
    recall = {s: float(fired[(sources == s) & ~benign].mean()) for s in set(sources[~benign].tolist())}
    fpr = {s: float(fired[(sources == s) & benign].mean()) for s in set(sources[benign].tolist())}
    return recall, fpr


def line(name: str, recall: dict, fpr: dict) -> str:
    r, f = np.mean(list(recall.values())), np.mean(list(fpr.values()))
    return f"{name:44s} mean recall {r:.3f}  mean FPR {f:.3f}  balanced accuracy {(r + 1 - f) / 2:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("report", type=Path, nargs="?", default=REPORT)
    parser.add_argument("--budgets", type=float, nargs="+", default=[0.02, 0.05, 0.08, 0.12])
    args = parser.parse_args()
    rows = json.loads(args.report.read_text(encoding="utf-8")).get("oof_rows")
    if not rows:
        raise SystemExit(f"{args.report} has no oof_rows: run bench/train_classifier.py with --folds first")
    sources = np.array([r[0] for r in rows])
    benign = np.array([r[1] == "benign" for r in rows])
    probs = np.array([r[2] for r in rows])

    fired = probs.argmax(axis=1) != 0
    recall, fpr = per_source(fired, sources, benign)
    print(line("argmax (no threshold)", recall, fpr))
    for src in sorted(set(recall) | set(fpr)):
        rec = f"{recall[src]:.3f}" if src in recall else ""
        fp = f"{fpr[src]:.3f}" if src in fpr else ""
        print(f"    {src:36s} recall {rec:>6s}  FPR {fp:>6s}")
    for budget in args.budgets:
        ts = [threshold(probs[benign, k], sources[benign], budget / 3) for k in (1, 2, 3)]
        fired = np.any(probs[:, 1:] >= np.array(ts), axis=1)
        print(line(f"per-class, budget {budget:.2f}", *per_source(fired, sources, benign)))
        attack = 1 - probs[:, 0]
        t = threshold(attack[benign], sources[benign], budget)
        print(
            line(
                f"any attack (1 - P(benign)), budget {budget:.2f}", *per_source(attack >= t, sources, benign)
            )
        )


if __name__ == "__main__":
    main()
