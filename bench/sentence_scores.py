"""Score long documents sentence by sentence, beside the shipped reading, for the document-level decision.

The documents are calibrate_decision.py's (same seeds, same sources): clean documents of about 1, 5, 20 and
100 kB joined from one benign source's texts, and attacks planted at a random place in them. For each document
this stores the shipped reading (``AttackClassifier.score``: the windows the screener picks, decoded views) and
the attack score (``1 - P(benign)``) of every sentence read alone (``sentence_ranges``: cut after ``. ! ? ;``
and at line breaks, at least 4 tokens, longer than a window cut as windows are), plus the time each took. With
``--windows 20kB`` it stores instead, for that bucket's documents, every window's attack and screener score (round
2: would reading more windows than the screener's 16 help?). Cached per source under
/tmp/stockade-bench/sentences; ``--reverse`` in a second process works from the other end.

    .venv/bin/python bench/sentence_scores.py [--docs 8 --per-source 40 --planted 8 --skip-sources ...]
    .venv/bin/python bench/sentence_scores.py --windows 20kB
"""

from __future__ import annotations

import argparse
import pickle
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from calibrate_decision import build
from window_scores import model_dir

from stockade.guardrails.checks.classification.class_scores import window_scores
from stockade.guardrails.checks.classification.model import AttackClassifier, load
from stockade.guardrails.checks.classification.windows import sentence_ranges, window_starts

CACHE = Path("/tmp/stockade-bench/sentences")
BATCH = 64


@dataclass
class Doc:
    source: str
    bucket: str
    label: str
    host: str | None
    windows: int
    shipped: float  # the shipped reading's attack score (top window read, decoded views)
    units: np.ndarray  # each sentence's attack score, in text order
    t_shipped: float
    t_units: float
    id: int = -1  # set by the report: the document's place in the cache


def batches(rows: Sequence[Sequence[int]]) -> list[list[int]]:
    """Indices of ``rows`` in batches of up to ``BATCH`` rows of similar length."""
    order = sorted(range(len(rows)), key=lambda i: len(rows[i]))
    return [order[k : k + BATCH] for k in range(0, len(order), BATCH)]


def unit_scores(model: AttackClassifier, text: str) -> np.ndarray:
    enc = model.tokenizer.encode(text, add_special_tokens=False)
    ranges = sentence_ranges(text, enc.tokens, enc.offsets, model.window - 2, model.stride)
    rows = [enc.ids[a:b] for a, b in ranges]
    out = np.zeros(len(rows))
    benign = model.labels.index("benign")
    for idx in batches(rows):  # every sentence, in batches of similar length as the check reads them
        probs, *_ = model._forward([rows[i] for i in idx])
        probs = window_scores(probs, model.labels, model.rule)
        out[idx] = 1.0 - probs[:, benign]
    return out


def all_windows(model: AttackClassifier, text: str) -> tuple[np.ndarray, np.ndarray, float]:
    """Every window's attack score and screener score (windows.py's cut), and the shipped reading's score."""
    s = model.score(text, max_windows=4096)
    ids = model.tokenizer.encode(text, add_special_tokens=False).ids
    body = model.window - 2
    rows = [ids[k : k + body] for k in window_starts(len(ids), body, model.stride)]
    out = np.zeros(len(rows))
    benign = model.labels.index("benign")
    for k in range(0, len(rows), 16):  # batches of 16 windows, as the shipped reading's
        probs, *_ = model._forward(rows[k : k + 16])
        out[k : k + 16] = 1.0 - window_scores(probs, model.labels, model.rule)[:, benign]
    shipped = max(v for c, v in s.probs.items() if c != "benign")
    return out, np.asarray(model.screener.attack_scores(rows)), shipped


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--docs", type=int, default=8)
    p.add_argument("--per-source", type=int, default=40)
    p.add_argument("--planted", type=int, default=8)
    p.add_argument("--skip-sources", default="synth_contrast_docs,synth_contrast_requests")
    p.add_argument("--part", default="", help="k/n: only every n-th source from the k-th")
    p.add_argument(
        "--windows", default="", help="a bucket (20kB): score every window of its documents instead"
    )
    p.add_argument(
        "--reverse", action="store_true", help="last source first (a second process meets the first)"
    )
    args = p.parse_args()
    tasks, groups = build(args)
    CACHE.mkdir(parents=True, exist_ok=True)
    (CACHE / "groups.pickle").write_bytes(pickle.dumps(groups))
    model = load(str(model_dir()))
    mine = list(tasks.items())
    if args.part:
        k, n = (int(x) for x in args.part.split("/"))
        mine = [t for i, t in enumerate(mine) if i % n == k]
    for name, items in reversed(mine) if args.reverse else mine:
        stem = f"windows{args.windows}_{name}" if args.windows else name
        path, busy = CACHE / f"{stem}.pickle", CACHE / f"{stem}.busy"
        if path.exists() or busy.exists():
            continue
        busy.touch()
        done = []
        for text, src, bucket, label, host, _ in items:
            if bucket == "text" or (args.windows and bucket != args.windows):
                continue
            if args.windows:
                done.append((src, host, *all_windows(model, text)))
                continue
            t0 = time.perf_counter()
            s = model.score(text, max_windows=4096)
            t1 = time.perf_counter()
            units = unit_scores(model, text)
            t2 = time.perf_counter()
            shipped = max(v for c, v in s.probs.items() if c != "benign")
            done.append(Doc(src, bucket, label, host, s.windows, shipped, units, t1 - t0, t2 - t1))
        path.write_bytes(pickle.dumps(done))
        busy.unlink()
        print(f"{name}: {len(done)} documents", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
