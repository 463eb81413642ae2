"""How much the shipped thresholds move with the draw of the calibration sample. Not a timed test.

Reads the scores cached by ``bench/calibrate_decision.py`` (run it first) and, per preset, redraws the benign
sample many times: each time every stratum (one source's texts of one length) is resampled with replacement at
the size asked for (short texts and 1 kB documents at each ``--sizes`` pair, the longer documents at their
cached size), and the thresholds are set again as ``calibrate_decision`` sets them (the window thresholds, and
the sentence rule's). It prints each threshold's spread (the 5th to 95th percentile of the redraws) per sample
size: what a calibration run's thresholds owe to the luck of its draw.

    .venv/bin/python bench/threshold_noise.py [--sizes 40:8,300:80] [--draws 200]
"""

from __future__ import annotations

import argparse
import pickle
import random
import sys
from collections import defaultdict

import calibrate_decision as cd
import numpy as np

import __main__

__main__.Scored = cd.Scored  # the cache was pickled by calibrate_decision run as a script


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--sizes",
        default="40:8,300:80",
        help="comma-separated SHORT:DOCS pairs: short texts and 1 kB documents per source",
    )
    parser.add_argument("--draws", type=int, default=200, help="redraws per sample size")
    args = parser.parse_args()
    if not cd.SCORES.exists():
        sys.exit(f"no cached scores at {cd.SCORES}: run bench/calibrate_decision.py first")
    scored, _, _, _ = pickle.loads(cd.SCORES.read_bytes())
    strata: dict[tuple[str, str], list[cd.Scored]] = defaultdict(list)
    for r in scored:
        if r.bucket == "text" or r.source not in cd.PROMPT_SOURCES:
            strata[(r.source, r.bucket)].append(r)
    for bucket in ("text", "1kB"):
        sizes = [len(v) for k, v in strata.items() if k[1] == bucket]
        print(f"cached: {bucket} per source {min(sizes)}-{max(sizes)}")
    rng = random.Random(5)
    for name, budget in cd.PRESETS.items():
        print(f"\n== {name} ({budget:.1%}): thresholds per bin, median (5th-95th percentile of redraws) ==")
        for size in args.sizes.split(","):
            n_short, n_docs = (int(x) for x in size.split(":"))
            per_bin: dict[str, list[float]] = defaultdict(list)
            for _ in range(args.draws):
                sample = []
                for (_, bucket), rows in strata.items():
                    n = {"text": n_short, "1kB": n_docs}.get(bucket, len(rows))
                    sample += rng.choices(rows, k=min(n, len(rows)))
                rule = cd.with_sentences(cd.Rule(cd.thresholds(sample, budget)), sample, budget)
                for b, t in rule.top.items():
                    per_bin[f"window {b}"].append(t)
                for b, t in (rule.sentence or {}).items():
                    per_bin[f"sentence {b}"].append(t)
            cells = []
            for b, ts in per_bin.items():
                lo, mid, hi = np.percentile(ts, [5, 50, 95])
                cells.append(f"{b}: {mid:.4f} ({lo:.4f}-{hi:.4f})")
            print(f"  {n_short} short texts and {n_docs} 1 kB documents per source (at most):")
            print("    " + "\n    ".join(cells))


if __name__ == "__main__":
    main()
