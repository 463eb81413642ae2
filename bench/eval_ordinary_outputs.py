"""How many ordinary agent outputs (no personal data) ``check_output`` leaves unchanged with the default config.

The corpus is bench/data/ordinary_outputs/ (sources.csv says where each text comes from): ``tune`` is the part
the default PII policy was tuned on, ``holdout`` a part written or collected before that tuning and not run
while tuning. Any change to a text (a mask or a block) counts as a change; only finding types are printed,
with ``--diff`` also the changed lines (the corpus holds no personal data).

    .venv/bin/python bench/eval_ordinary_outputs.py [--part tune|holdout|all] [--diff] [--json PATH]
        [--config guardrails.yaml]   (another configuration than the default)
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import difflib
import json
import math
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from stockade.guardrails import GuardrailSystem

CORPUS = Path(__file__).resolve().parent / "data" / "ordinary_outputs"
PARTS = ("tune", "holdout")


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of a proportion."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def load(part: str) -> list[dict[str, str]]:
    with (CORPUS / "sources.csv").open(encoding="utf-8", newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if part == "all" or r["file"].split("/", 1)[0] == part]
    for row in rows:
        row["part"] = row["file"].split("/", 1)[0]
        row["text"] = (CORPUS / row["file"]).read_text(encoding="utf-8")
    return rows


async def measure(part: str, system: GuardrailSystem | None = None) -> dict[str, Any]:
    """Run check_output (default config unless ``system`` is given) over one part of the corpus."""
    system = system or GuardrailSystem()
    rows = load(part)
    changed: list[dict[str, Any]] = []
    by: dict[str, dict[str, Counter[str]]] = {"kind": defaultdict(Counter), "origin": defaultdict(Counter)}
    for row in rows:
        verdict = await system.check_output(row["text"])
        out = row["text"] if verdict.action.value in ("allow", "warn") else verdict.masked_text
        same = out == row["text"]
        for key in by:
            by[key][row[key]]["texts"] += 1
            by[key][row[key]]["unchanged"] += int(same)
        if not same:
            changed.append(
                {
                    "file": row["file"],
                    "action": verdict.action.value,
                    "findings": dict(Counter(f"{f.check}:{f.type}" for f in verdict.findings)),
                    "diff": _changed_lines(row["text"], out),
                }
            )
    n, unchanged = len(rows), len(rows) - len(changed)
    low, high = wilson(unchanged, n)
    return {
        "part": part,
        "texts": n,
        "unchanged": unchanged,
        "share": unchanged / n if n else 0.0,
        "wilson95": [low, high],
        "by_kind": {k: dict(v) for k, v in sorted(by["kind"].items())},
        "by_origin": {k: dict(v) for k, v in sorted(by["origin"].items())},
        "changed": changed,
    }


def _changed_lines(before: str, after: str | None) -> list[str]:
    if after is None:
        return ["(blocked)"]
    diff = difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
    return [line for line in diff if line[:1] in "+-" and line[:3] not in ("---", "+++")]


def report(res: dict[str, Any], show_diff: bool) -> None:
    low, high = res["wilson95"]
    print(
        f"[{res['part']}] texts {res['texts']}, unchanged {res['unchanged']} = {res['share']:.1%} "
        f"(95% Wilson interval {low:.1%} - {high:.1%})"
    )
    for key in ("origin", "kind"):
        cells = ", ".join(f"{k} {v['unchanged']}/{v['texts']}" for k, v in res[f"by_{key}"].items())
        print(f"  by {key}: {cells}")
    for c in res["changed"]:
        types = ", ".join(f"{t} ({n})" for t, n in sorted(c["findings"].items()))
        print(f"  changed {c['file']} [{c['action']}]: {types}")
        if show_diff:
            for line in c["diff"]:
                print(f"      {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=[*PARTS, "all"], default="tune")
    parser.add_argument("--diff", action="store_true", help="Also print the changed lines.")
    parser.add_argument("--json", type=Path, help="Write the results as JSON here.")
    parser.add_argument(
        "--config", type=Path, help="A guardrails configuration file (default: the defaults)."
    )
    args = parser.parse_args()
    parts = PARTS if args.part == "all" else (args.part,)

    async def run() -> list[dict[str, Any]]:
        system = GuardrailSystem(args.config)
        return [await measure(p, system) for p in parts]

    results = asyncio.run(run())
    for res in results:
        report(res, args.diff)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
