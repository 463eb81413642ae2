"""Report the attack classifier's figures (not a timed test).

Reads the cross-source evaluation that bench/train_classifier.py wrote (/tmp/stockade-bench/classifier_eval.json),
and scores the shipped model itself (ONNX int8, the file users get) on the sources it never saw in training: the
evaluation-only sources and llm-warden's test split. Prints per-source tables with 95% Wilson intervals and,
with --write-readme, puts them into libs/guardrails/docs/measurements.md.

    .venv/bin/python bench/eval_classifier.py [--write-readme]
    .venv/bin/python bench/eval_classifier.py --extra [--cap 400]   # every bench/data/classifier source

``--extra`` scores the shipped model on each source of bench/data/classifier (at most ``--cap`` texts per source
and label, fixed seed) and writes /tmp/stockade-bench/classifier_extra.json: a model trained before those
sources were added has never seen any of them, so this is a held-out figure for it.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from classifier_data import (
    ATTACKS,
    EVAL_ONLY,
    EXTRA,
    OVER_DEFENCE,
    cap_per_source,
    load_all,
    load_llm_warden,
)

from stockade.guardrails.checks.classification.model import load
from stockade.guardrails_model import model_dir

REPORT = Path("/tmp/stockade-bench/classifier_eval.json")
README = Path(__file__).resolve().parents[1] / "libs" / "guardrails" / "docs" / "measurements.md"
START, END = "<!-- classifier:results:start -->", "<!-- classifier:results:end -->"


def wilson(k: int, n: int) -> tuple[float, float]:
    if n == 0:
        return (0.0, 0.0)
    z, p = 1.96, k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def score_shipped(thresholds: dict[str, float], extra_cap: int = 0) -> dict[str, dict[str, int]]:
    model = load(str(model_dir()))
    rows: dict[str, dict[str, int]] = {}
    if extra_cap:
        names = {p.stem for p in EXTRA.glob("*.jsonl")}
        examples = cap_per_source([e for e in load_all() if e.source in names], extra_cap)
    else:
        warden_test = {e.text for e in load_llm_warden("test")}
        examples = [e for e in load_all() if e.source in EVAL_ONLY or e.text in warden_test]
    for e in examples:
        scores = model.score(e.text, max_windows=10_000)
        fired = any(scores.probs[c] >= thresholds[c] for c in ATTACKS)
        name = "llm-warden (test split)" if e.source == "llm-warden" else e.source
        r = rows.setdefault(name, {"n_attack": 0, "caught": 0, "n_benign": 0, "flagged": 0})
        if e.label == "benign":
            r["n_benign"] += 1
            r["flagged"] += fired
        else:
            r["n_attack"] += 1
            r["caught"] += fired
    return rows


def table(rows: dict[str, dict[str, Any]]) -> list[str]:
    out = [
        "| source | attacks | recall (95% CI) | benign | false positives (95% CI) |",
        "|---|---:|---|---:|---|",
    ]
    for src in sorted(rows):
        r = rows[src]
        rec = fpr = ""
        if r["n_attack"]:
            lo, hi = wilson(r["caught"], r["n_attack"])
            rec = f"{r['caught'] / r['n_attack']:.3f} ({lo:.2f}-{hi:.2f})"
        if r["n_benign"]:
            lo, hi = wilson(r["flagged"], r["n_benign"])
            fpr = f"{r['flagged'] / r['n_benign']:.3f} ({lo:.3f}-{hi:.3f})"
        name = f"{src} (over-defence)" if src in OVER_DEFENCE and r["n_benign"] else src
        out.append(f"| {name} | {r['n_attack']} | {rec} | {r['n_benign']} | {fpr} |")
    return out


def balanced(rows: dict[str, dict[str, Any]], *, over_defence: bool = True) -> tuple[float, float, float]:
    """Mean attack recall, mean false-positive rate and balanced accuracy over the sources of ``rows``; with
    ``over_defence=False`` the over-defence benchmarks are left out of the false-positive side."""
    recalls = [r["caught"] / r["n_attack"] for r in rows.values() if r["n_attack"]]
    specs = [
        1 - r["flagged"] / r["n_benign"]
        for src, r in rows.items()
        if r["n_benign"] and (over_defence or src not in OVER_DEFENCE)
    ]
    mean_r, mean_s = sum(recalls) / len(recalls), sum(specs) / len(specs)
    return mean_r, 1 - mean_s, (mean_r + mean_s) / 2


def over_defence_fpr(rows: dict[str, dict[str, Any]]) -> str:
    parts = [
        f"{src} {r['flagged'] / r['n_benign']:.3f}"
        for src, r in sorted(rows.items())
        if src in OVER_DEFENCE and r["n_benign"]
    ]
    return ", ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--write-readme", action="store_true")
    parser.add_argument("--extra", action="store_true", help="score the bench/data/classifier sources only")
    parser.add_argument("--cap", type=int, default=400, help="with --extra: most texts per source and label")
    args = parser.parse_args()
    if args.extra:
        meta = json.loads((model_dir() / "classifier.json").read_text(encoding="utf-8"))
        rows = score_shipped(meta["thresholds"], extra_cap=args.cap)
        print("\n".join(table(rows)))
        r, f, b = balanced(rows)
        print(f"mean attack recall {r:.3f}, mean false-positive rate {f:.3f}, balanced accuracy {b:.3f}")
        out = REPORT.with_name("classifier_extra.json")
        out.write_text(json.dumps({"thresholds": meta["thresholds"], "rows": rows}), encoding="utf-8")
        return
    report = json.loads(REPORT.read_text(encoding="utf-8"))
    meta = json.loads((model_dir() / "classifier.json").read_text(encoding="utf-8"))
    thresholds = meta["thresholds"]
    t0 = time.time()
    shipped = score_shipped(thresholds)
    cross = report["cross_source"]
    r_cross, f_cross, b_cross = balanced(cross)
    _, f_ordinary, b_ordinary = balanced(cross, over_defence=False)
    unseen = {k: v for k, v in shipped.items() if k in EVAL_ONLY}
    lines = [
        f"Measured by `bench/train_classifier.py` and `bench/eval_classifier.py` ({time.strftime('%Y-%m-%d')}; "
        f"training {report.get('minutes', '?')} min on 2 cores). Thresholds (chosen on out-of-fold scores "
        f"of the ordinary benign sources: at most {float(report['args'].get('fpr', 0.02)):.0%} of them "
        f"flagged, one third per class): {', '.join(f'{k} {v}' for k, v in thresholds.items())}.",
        "",
        f"**Cross-source** (each source scored by a model trained without it: {len(report['args'] and cross)} "
        f"sources in {report['args']['folds']} groups of whole sources; at most "
        f"{report['args']['score_cap']} texts per source and label scored). Mean attack recall "
        f"{r_cross:.3f}; mean false-positive rate {f_ordinary:.3f} on ordinary benign sources (balanced "
        f"accuracy {b_ordinary:.3f}) and {f_cross:.3f} with the over-defence benchmarks, benign text "
        f"written to look like attacks (balanced accuracy {b_cross:.3f}; {over_defence_fpr(cross)}).",
        "",
        *table(cross),
        "",
        "**Never trained on** (evaluation-only by licence; the shipped ONNX int8 model):",
        "",
        *table(unseen),
        "",
        "**Same-source split, for comparison** (llm-warden's test split; the model trained on its train split; "
        "the README's earlier F1 0.961 was this kind of figure):",
        "",
        *table({k: v for k, v in shipped.items() if k not in EVAL_ONLY}),
    ]
    latency = REPORT.with_name("check_latency.json")
    if latency.exists():
        lat = json.loads(latency.read_text(encoding="utf-8"))
        lines += [
            "",
            "**Latency** of `check_input` with the default checks (PII + this classifier), p50 / p95 in ms, "
            "beside each check alone in the same run (`bench/eval_detectors.py --only default-latency`; load "
            f"average {lat['load_before']:.1f} before, {lat['load_after']:.1f} after):",
            "",
            "| input | check_input | PII check alone | classification alone | ratio to the slower check |",
            "|---|---|---|---|---|",
        ]
        for size in ("1 kB", "20 kB"):
            row = lat[size]
            cells = [
                f"{row[k]['p50_ms']} / {row[k]['p95_ms']}"
                for k in (
                    "check_input (pii + classification)",
                    "baseline: pii check alone",
                    "baseline: classification check alone",
                )
            ]
            lines.append(
                f"| {size} | {' | '.join(cells)} | {row['ratio: check_input / slower check alone']} |"
            )
    block = "\n".join(lines)
    print(block)
    print(f"\n(scored the shipped model in {time.time() - t0:.0f} s)")
    if args.write_readme:
        text = README.read_text(encoding="utf-8")
        if START not in text:
            raise SystemExit(f"{README} has no {START} marker")
        head, rest = text.split(START, 1)
        _, tail = rest.split(END, 1)
        README.write_text(f"{head}{START}\n{block}\n{END}{tail}", encoding="utf-8")
        print(f"wrote {README}")


if __name__ == "__main__":
    main()
