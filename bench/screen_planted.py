"""Several attack-classifier directories side by side on calibrate_decision.py's draw: attacks planted in
documents of 1, 5, 20 and 100 kB against the clean documents of the same length, and short attacks against
short benign texts. Not a timed test; a quick screen of a trained candidate before a full calibration.

Every score is the real scoring path (``AttackClassifier.score``: windows, screener, decoded views): a text's
highest window score of attack of any kind (the sentence rule is left out for every model alike). Each model is
set at its own threshold flagging ``--fpr`` of the clean texts of each length (documents of prompt collections
left out, as calibrate_decision.py leaves them out), so the comparison is at equal false-positive rates; the
hosts and the planted attacks are the calibration's, mostly from sources the models were trained on, so the
figures are for comparing models paired, not for the README. The last directory is the base of the paired
counts ("only X / only base": planted attacks one model catches and the other does not); AUC needs no
threshold. Scores are cached per directory name and sample under /tmp/stockade-bench/screen.

    .venv/bin/python bench/screen_planted.py CANDIDATE_DIR [...] libs/guardrails-model/src/stockade/guardrails_model
"""

from __future__ import annotations

import argparse
import hashlib
import pickle
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

import calibrate_decision as cd
from classifier_data import EVAL_ONLY

from stockade.guardrails.checks.classification.model import load

CACHE = Path("/tmp/stockade-bench/screen")
SKIP = "synth_contrast_docs,synth_contrast_requests,synth_first_minute,synth_languages"


def scores(directory: str, tasks: list[cd.Task], key: str) -> np.ndarray:
    cache = CACHE / f"{Path(directory).name}_{key}.pickle"
    if cache.exists():
        return pickle.loads(cache.read_bytes())
    model = load(directory)
    out = []
    for k, (text, *_) in enumerate(tasks):
        s = model.score(text, max_windows=4096)
        out.append(max(v for c, v in s.probs.items() if c != "benign"))
        if k % 500 == 0:
            print(f"{directory}: {k}/{len(tasks)} texts scored", flush=True)
    CACHE.mkdir(parents=True, exist_ok=True)
    cache.write_bytes(pickle.dumps(np.array(out)))
    return np.array(out)


def auc(pos: np.ndarray, neg: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(np.r_[np.ones(len(pos)), np.zeros(len(neg))], np.r_[pos, neg]))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dirs", nargs="+", help="model directories; the last is the base of the paired counts")
    p.add_argument("--docs", type=int, default=8, help="documents of 5 and 20 kB per source")
    p.add_argument("--long-docs", type=int, default=8, help="documents of 100 kB per source")
    p.add_argument("--small-docs", type=int, default=12, help="documents of 1 kB per source")
    p.add_argument("--planted", type=int, default=16, help="attacks per source planted in documents")
    p.add_argument("--per-source", type=int, default=30, help="attacks per source")
    p.add_argument("--short", type=int, default=30, help="short benign texts per source")
    p.add_argument("--skip-sources", default=SKIP)
    p.add_argument("--fpr", type=float, default=0.02)
    a = p.parse_args()
    by_source, _ = cd.build(a)
    tasks = [t for ts in by_source.values() for t in ts]
    key = f"{a.docs}_{a.long_docs}_{a.small_docs}_{a.planted}_{a.per_source}_{a.short}_{a.skip_sources}"
    key = hashlib.sha256(key.encode()).hexdigest()[:12]
    print(f"{len(tasks)} texts", flush=True)
    res = {d: scores(d, tasks, key) for d in a.dirs}
    src = np.array([t[1] for t in tasks])
    bucket = np.array([t[2] for t in tasks])
    label = np.array([t[3] for t in tasks])
    host = np.array([t[4] or "" for t in tasks])
    clean = (label == "benign") & ~np.isin(src, list(cd.PROMPT_SOURCES))
    evalonly = np.isin(src, list(EVAL_ONLY))
    base = a.dirs[-1]
    for b in cd.BUCKETS:
        neg = clean & (bucket == b)
        pos = (label != "benign") & (bucket == b) & ((host != "") if b != "text" else True)
        print(f"{b}: {neg.sum()} clean, {pos.sum()} {'attacks' if b == 'text' else 'planted'}")
        fired = {}
        for d in a.dirs:
            s = res[d]
            t = float(np.quantile(s[neg], 1 - a.fpr))
            fired[d] = s > t
            extra = ""
            if b == "text":
                extra = (
                    f" (trained sources {fired[d][pos & ~evalonly].mean():.3f}, "
                    f"evaluation-only {fired[d][pos & evalonly].mean():.3f})"
                )
            print(
                f"    {Path(d).name}: threshold {t:.4f} caught {fired[d][pos].mean():.3f}{extra} "
                f"AUC {auc(s[pos], s[neg]):.3f}"
            )
        for d in a.dirs[:-1]:
            only_new = int((fired[d] & ~fired[base])[pos].sum())
            only_base = int((~fired[d] & fired[base])[pos].sum())
            print(f"    paired: only {Path(d).name} {only_new} / only {Path(base).name} {only_base}")


if __name__ == "__main__":
    main()
