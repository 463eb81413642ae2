"""Held-out comparison of document-level rules on the scores of bench/sentence_scores.py. Not a timed test.

Benign sources are in two groups of whole sources; a rule's thresholds (per window-count bin, non-decreasing
with length, source-weighted, calibrate_decision.py's) are set on one group's clean documents and measured on the
other group's clean documents and on the attacks planted in them, both ways round. Every rule is measured on the
same documents, so the comparison is paired: "only A / only B" count the planted attacks one rule catches and
the other misses. Attack sources never tune anything here (the rules are fitted on clean documents only).

    .venv/bin/python bench/sentence_report.py                # round 1: sentences read alone
    .venv/bin/python bench/sentence_report.py --windows 20kB  # round 2: more windows read (screener budget)

Measured 2026-11-29 (libs/guardrails/docs/classifier-measurements.md, fifth round): neither beat the shipped
reading, so neither is shipped.
"""

from __future__ import annotations

import argparse
import pickle
from collections import defaultdict
from collections.abc import Callable

import numpy as np
from calibrate_decision import BINS, PRESETS, bin_of, weighted_threshold, wilson
from classifier_data import EVAL_ONLY
from sentence_scores import CACHE, Doc

from stockade.guardrails.checks.classification.decision import logit
from stockade.guardrails.checks.classification.windows import pick_windows

BUCKETS = ("1kB", "5kB", "20kB", "100kB")


def _lg(a: np.ndarray) -> np.ndarray:
    a = np.clip(a, 1e-4, 1 - 1e-4)
    return np.log(a / (1 - a))


def rules() -> dict[str, Callable[[Doc], float]]:
    def sent(d: Doc) -> float:
        return logit(float(d.units.max()))

    def spike(w: float) -> Callable[[Doc], float]:
        def f(d: Doc) -> float:
            z = np.sort(_lg(d.units))
            return float(z[-1] - w * np.median(z[:-1])) if len(z) > 2 else float(z[-1])

        return f

    return {
        "shipped": lambda d: logit(d.shipped),
        "sentences": sent,
        "max(both)": lambda d: max(logit(d.shipped), sent(d)),
        "sent spike .5": spike(0.5),
    }


def fit(docs: list[Doc], fn: Callable[[Doc], float], budget: float) -> dict[int, float]:
    out, prev = {}, -1e9
    for b in BINS:
        sel = [d for d in docs if bin_of(d.windows) == b]
        if sel:
            t = weighted_threshold(np.array([fn(d) for d in sel]), [d.source for d in sel], budget, -1e9, 1e9)
            prev = max(prev, t)
        out[b] = prev
    return out


def main() -> None:
    groups = pickle.loads((CACHE / "groups.pickle").read_bytes())
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--windows", default="", help="round 2: the window budget on one bucket's documents")
    args = p.parse_args()
    docs: list[Doc] = []
    if args.windows:
        return budgets(args.windows)
    for path in sorted(CACHE.glob("*-*.pickle"), key=lambda p: p.stem):
        if path.stem.startswith("windows"):
            continue
        docs.extend(pickle.loads(path.read_bytes()))
    benign = [d for d in docs if d.host is None]
    planted = [d for d in docs if d.host is not None]
    print(f"{len(benign)} clean documents, {len(planted)} planted, groups {groups}")
    fns = rules()
    for preset, budget in PRESETS.items():
        print(f"\n== {preset}: budget {budget:.1%} per document ==")
        flags: dict[str, dict[int, bool]] = defaultdict(dict)
        hits: dict[str, dict[int, bool]] = defaultdict(dict)
        for grp in groups:
            cal = [d for d in benign if d.source not in grp]
            for name, fn in fns.items():
                t = fit(cal, fn, budget)
                for i, d in enumerate(benign):
                    if d.source in grp:
                        flags[name][i] = fn(d) >= t[bin_of(d.windows)]
                for i, d in enumerate(planted):
                    if d.host in grp:
                        hits[name][i] = fn(d) >= t[bin_of(d.windows)]
        for bucket in BUCKETS:
            print(f"  {bucket}")
            for name in fns:
                fp = [v for i, v in flags[name].items() if benign[i].bucket == bucket]
                hp = [v for i, v in hits[name].items() if planted[i].bucket == bucket]
                pa = [(hits["shipped"][i], v) for i, v in hits[name].items() if planted[i].bucket == bucket]
                only_new = sum(b and not a for a, b in pa)
                only_old = sum(a and not b for a, b in pa)
                print(
                    f"    {name:14s} clean flagged {np.mean(fp):.3f} ({wilson(float(np.mean(fp)), len(fp))},"
                    f" n={len(fp)})  planted caught {np.mean(hp):.3f} ({wilson(float(np.mean(hp)), len(hp))},"
                    f" n={len(hp)})  vs shipped: only this {only_new}, only shipped {only_old}"
                )
        print("  planted caught per attack source (all lengths), shipped -> sentences -> max(both):")
        by: dict[str, list[tuple[bool, bool, bool]]] = defaultdict(list)
        for i in hits["shipped"]:
            by[planted[i].source].append((hits["shipped"][i], hits["sentences"][i], hits["max(both)"][i]))
        for src, v in sorted(by.items()):
            a = np.mean(v, axis=0)
            print(
                f"    {src:40s} n={len(v):2d} {a[0]:.2f} -> {a[1]:.2f} -> {a[2]:.2f}{' (eval only)' if src in EVAL_ONLY else ''}"
            )
        print(
            "  clean flagged per benign source (documents of all lengths), shipped / sentences / max(both):"
        )
        bs: dict[str, list[tuple[bool, bool, bool]]] = defaultdict(list)
        for i in flags["shipped"]:
            bs[benign[i].source].append((flags["shipped"][i], flags["sentences"][i], flags["max(both)"][i]))
        for src, v in sorted(bs.items()):
            a = np.mean(v, axis=0)
            print(f"    {src:40s} n={len(v):2d} {a[0]:.2f} / {a[1]:.2f} / {a[2]:.2f}")
    for bucket in BUCKETS:
        sel = [d for d in docs if d.bucket == bucket]
        ts, tu = np.median([d.t_shipped for d in sel]), np.median([d.t_units for d in sel])
        print(
            f"time {bucket}: sentences / shipped reading = {tu / ts:.2f} (median over {len(sel)} documents)"
        )


def budgets(bucket: str) -> None:
    """Round 2: the screener's budget. Every window of the bucket's documents was scored (sentence_scores.py
    --windows); a budget of k reads the first, the last and the k - 2 windows the screener ranks highest, joined
    with the shipped reading. One threshold per rule (the documents are of one length), set on one benign group
    and measured on the other, both ways round."""
    groups = pickle.loads((CACHE / "groups.pickle").read_bytes())
    rows = []
    for path in sorted(CACHE.glob(f"windows{bucket}_*.pickle"), key=lambda p: p.stem):
        rows.extend(pickle.loads(path.read_bytes()))
    benign = [r for r in rows if r[1] is None]
    planted = [r for r in rows if r[1] is not None]
    print(f"{bucket}: {len(benign)} clean documents, {len(planted)} planted")

    def read(k: int) -> Callable[[tuple], float]:
        def f(r: tuple) -> float:
            wins, screen, shipped = r[2], r[3], r[4]
            idx = pick_windows(list(screen), k) if len(wins) > k else list(range(len(wins)))
            return max(logit(shipped), logit(float(wins[idx].max())))

        return f

    fns = {"shipped (16)": lambda r: logit(r[4]), **{f"budget {k}": read(k) for k in (32, 64, 4096)}}
    for preset, budget in PRESETS.items():
        hits: dict[str, list[bool]] = defaultdict(list)
        flags: dict[str, list[bool]] = defaultdict(list)
        for grp in groups:
            cal = [r for r in benign if r[0] not in grp]
            for name, fn in fns.items():
                t = weighted_threshold(np.array([fn(r) for r in cal]), [r[0] for r in cal], budget, -1e9, 1e9)
                flags[name] += [fn(r) >= t for r in benign if r[0] in grp]
                hits[name] += [fn(r) >= t for r in planted if r[1] in grp]
        print(f"  {preset} ({budget:.1%})")
        for name in fns:
            fp, hp = float(np.mean(flags[name])), float(np.mean(hits[name]))
            a, b = hits["shipped (16)"], hits[name]
            print(
                f"    {name:13s} clean flagged {fp:.3f} ({wilson(fp, len(flags[name]))}, n={len(flags[name])})"
                f"  planted caught {hp:.3f} ({wilson(hp, len(b))}, n={len(b)})  only this"
                f" {sum(y and not x for x, y in zip(a, b))}, only shipped {sum(x and not y for x, y in zip(a, b))}"
            )


if __name__ == "__main__":
    main()
