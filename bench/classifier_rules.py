"""Decision rules compared on the out-of-fold scores of a cross-source run (no retraining; not a timed test).

bench/train_classifier.py keeps every scored text's source, label and class scores (``oof_rows``: the class
probabilities, or with ``--rule typed-attack`` the typed scores, whose benign column is still the highest
P(benign) over the windows; the raw probabilities are in ``oof_raw_rows``); each was scored by a model that
never saw its source. With ``--ordinary`` the thresholds are set on ordinary benign sources and the
over-defence benchmarks are reported apart (``--verbose``: recall per attack source). This prints, per held-out source, attack recall and benign
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
from typing import Any

import numpy as np
from classifier_data import OVER_DEFENCE

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
    parser.add_argument(
        "--ordinary",
        action="store_true",
        help="set thresholds on ordinary benign sources only; report the over-defence ones apart",
    )
    parser.add_argument("--verbose", action="store_true", help="recall per attack source for each rule")
    args = parser.parse_args()
    rows = json.loads(args.report.read_text(encoding="utf-8")).get("oof_rows")
    if not rows:
        raise SystemExit(f"{args.report} has no oof_rows: run bench/train_classifier.py with --folds first")
    sources = np.array([r[0] for r in rows])
    benign = np.array([r[1] == "benign" for r in rows])
    probs = np.array([r[2] for r in rows])
    # the texts whose false positives set the thresholds
    budget_rows = benign & ~np.isin(sources, list(OVER_DEFENCE)) if args.ordinary else benign

    fired = probs.argmax(axis=1) != 0
    recall, fpr = per_source(fired, sources, benign)
    print(line("argmax (no threshold)", recall, fpr))
    for src in sorted(set(recall) | set(fpr)):
        rec = f"{recall[src]:.3f}" if src in recall else ""
        fp = f"{fpr[src]:.3f}" if src in fpr else ""
        print(f"    {src:36s} recall {rec:>6s}  FPR {fp:>6s}")
    for budget in args.budgets:
        ts = [threshold(probs[budget_rows, k], sources[budget_rows], budget / 3) for k in (1, 2, 3)]
        fired = np.any(probs[:, 1:] >= np.array(ts), axis=1)
        report(f"per-class, budget {budget:.2f} {np.round(ts, 4).tolist()}", fired, sources, benign, args)
        attack = 1 - probs[:, 0]
        t = threshold(attack[budget_rows], sources[budget_rows], budget)
        report(f"any attack (1 - P(benign)), budget {budget:.2f}", attack >= t, sources, benign, args)


def report(name: str, fired: np.ndarray, sources: np.ndarray, benign: np.ndarray, args: Any) -> None:
    recall, fpr = per_source(fired, sources, benign)
    if not args.ordinary:
        print(line(name, recall, fpr))
        return
    ordinary = {s: v for s, v in fpr.items() if s not in OVER_DEFENCE}
    over = {s: v for s, v in fpr.items() if s in OVER_DEFENCE}
    worst = max(ordinary.items(), key=lambda kv: kv[1])
    print(line(name, recall, ordinary))
    print(
        f"    worst ordinary source {worst[0]} {worst[1]:.3f}; over-defence "
        + ", ".join(f"{s} {v:.3f}" for s, v in sorted(over.items()))
    )
    if args.verbose:
        for src in sorted(recall):
            print(f"        {src:36s} recall {recall[src]:.3f}")


if __name__ == "__main__":
    main()
