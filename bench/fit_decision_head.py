"""Fit the classifier's decision head (libs/guardrails-model head.npz; see head.py). Not a timed test.

1. Give the shipped model.onnx a second output, ``hidden5`` (the fifth encoder layer, below the fine-tuned one),
   unless it has it: the head reads the same forward pass as the classification.
2. Score the windows of every trainable source (no evaluation-only file; reserved sources are refused by
   classifier_data), at most ``--cap`` texts per source and label, plus the templated textbook attacks and hard
   negatives of bench/synth_textbook.py (weighted ``--synth-weight`` sources each). An attack text's windows
   whose classifier score of attack is under 0.5 are left out (the benign host text of a planted injection).
3. Cross-source check: the sources are dealt into 3 groups; each group is scored by a head fitted on the other
   two, and the classifier's own ``1 - P(benign)`` on the same windows is the paired baseline. At the threshold
   that flags 1% of the benign windows, print the mean recall over attack sources (each source weighted the
   same) and the flagged share of the hard negatives.
4. Fit on everything and write head.npz.

    .venv/bin/python bench/fit_decision_head.py [--C 1.0] [--synth-weight 3] [--no-write]
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from classifier_data import EVAL_ONLY, cap_per_source, load_all, source_folds
from onnx import TensorProto, helper
from sklearn.linear_model import LogisticRegression
from window_scores import model_dir, score

LAYER = "/bottom.4/output/LayerNorm/LayerNormalization_output_0"
OUTPUT = "hidden5"
SYNTH = ("synth_textbook_attacks", "synth_hard_negatives")


def add_embedding_output(path: Path) -> bool:
    """Add the ``hidden5`` output to ``path`` (True) unless it is there (False)."""
    model = onnx.load(str(path))
    if any(o.name == OUTPUT for o in model.graph.output):
        return False
    model.graph.node.append(helper.make_node("Identity", [LAYER], [OUTPUT], name="hidden5_identity"))
    model.graph.output.append(
        helper.make_tensor_value_info(OUTPUT, TensorProto.FLOAT, ["windows", "tokens", 384])
    )
    onnx.save(model, str(path))
    return True


def features(d: dict[str, Any]) -> np.ndarray:
    return np.hstack([d["emb"].astype(np.float32), np.log(d["probs"] + 1e-6)])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cap", type=int, default=300)
    parser.add_argument("--C", type=float, default=1.0)
    parser.add_argument("--synth-weight", type=float, default=3.0)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    if add_embedding_output(Path(model_dir()) / "model.onnx"):
        print("model.onnx: added the hidden5 output")
    everything = [e for e in load_all() if e.source not in EVAL_ONLY]
    rows = [e for e in everything if e.source not in SYNTH]
    attacks = cap_per_source([e for e in rows if e.label != "benign"], args.cap, seed=5)
    benign = cap_per_source([e for e in rows if e.label == "benign"], 400, seed=5)
    synth = [e for e in everything if e.source in SYNTH]
    a = score([e.text for e in attacks], 3, tag="library-attacks")
    b = score([e.text for e in benign], 4, tag="library-benign")
    s = score([e.text for e in synth], 2, tag="synth")
    keep = (1 - a["probs"][:, 0]) >= 0.5
    x = np.vstack([features(a)[keep], features(b), features(s)])
    src = np.array(
        [attacks[i].source for i in a["owner"][keep]]
        + [benign[i].source for i in b["owner"]]
        + [synth[i].source for i in s["owner"]]
    )
    y = np.array(
        [1] * int(keep.sum()) + [0] * len(b["owner"]) + [int(synth[i].label != "benign") for i in s["owner"]]
    )
    baseline = np.r_[1 - a["probs"][keep, 0], 1 - b["probs"][:, 0], 1 - s["probs"][:, 0]]
    count = Counter(zip(src.tolist(), y.tolist(), strict=True))

    def weights(idx: np.ndarray) -> np.ndarray:
        w = np.array([1.0 / count[(src[i], y[i])] for i in idx])
        w *= np.where(np.isin(src[idx], SYNTH), args.synth_weight, 1.0)
        for c in (0, 1):
            w[y[idx] == c] /= w[y[idx] == c].sum()
        return w * len(w) / 2

    def fit(idx: np.ndarray) -> LogisticRegression:
        return LogisticRegression(C=args.C, max_iter=3000).fit(x[idx], y[idx], sample_weight=weights(idx))

    oof = np.zeros(len(y))
    for group in source_folds(everything, 3):
        held = np.isin(src, group)
        oof[held] = fit(np.flatnonzero(~held)).predict_proba(x[held])[:, 1]
    ordinary = (y == 0) & ~np.isin(src, SYNTH)
    print(f"{len(y)} windows ({int(y.sum())} attack) from {len(set(src.tolist()))} sources")
    print("cross-source, threshold at 1% of ordinary benign windows (paired, same windows):")
    for name, v in (("classifier 1 - P(benign)", baseline), ("decision head", oof)):
        t = float(np.quantile(v[ordinary], 0.99))
        recall = [float(np.mean(v[(src == q) & (y == 1)] >= t)) for q in sorted(set(src[y == 1].tolist()))]
        hard = float(np.mean(v[src == SYNTH[1]] >= t))
        synth_recall = float(np.mean(v[src == SYNTH[0]] >= t))
        print(
            f"  {name:26s} mean recall per attack source {np.mean(recall):.3f}; templated textbook attacks "
            f"{synth_recall:.3f}; templated hard negatives flagged {hard:.3f}"
        )
    if args.no_write:
        return
    head = fit(np.arange(len(y)))
    out = Path(model_dir()) / "head.npz"
    np.savez(out, weights=head.coef_[0].astype(np.float32), bias=head.intercept_.astype(np.float32))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
