"""Latency of check_input with the default checks (PII + the trained classifier) on 1 kB and 20 kB inputs.

Not a timed test: it prints p50/p95 per size next to baselines measured in the same run (the PII check alone,
the classifier alone, spaCy's pipeline alone), so a noisy machine shows as noisy baselines too.

spaCy's pipeline alone is the PII check's model as spaCy loads it (``spacy.load(model)``, every component)
called on the same text; beside it, its ``ner`` pipe alone (the only component the check runs, see the
guardrails README, "PII/PHI"). The goal (issue 29): the PII check within 1.2 x spaCy's pipeline.

    .venv/bin/python bench/check_latency.py [--n 40] [--pii]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from classifier_data import load_all

from stockade.guardrails import GuardrailSystem
from stockade.guardrails.checks.base import CheckContext
from stockade.guardrails.checks.config import Stage
from stockade.guardrails.checks.pii.nlp import keep_only_ner, use_numpy_matmul

OUT = Path("/tmp/stockade-bench")


def documents(size: int, n: int, seed: int = 5) -> list[str]:
    """n texts of ``size`` characters joined from benign prompts and documents of several sources."""
    rng = random.Random(seed)
    pool = [e.text for e in load_all() if e.label == "benign"]
    out = []
    for _ in range(n):
        parts: list[str] = []
        while sum(len(p) + 2 for p in parts) < size:
            parts.append(rng.choice(pool))
        out.append("\n\n".join(parts)[:size])
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def timed(fn: Any, texts: list[str]) -> dict[str, float]:
    for t in texts[:2]:
        await fn(t)
    samples = []
    for t in texts:
        start = time.perf_counter()
        await fn(t)
        samples.append((time.perf_counter() - start) * 1000)
    return {
        "p50_ms": round(statistics.median(samples), 1),
        "p95_ms": round(pct(samples, 0.95), 1),
        "n": len(samples),
    }


async def timed_interleaved(fns: dict[str, Any], texts: list[str]) -> dict[str, dict[str, Any]]:
    """Several synchronous functions called in turn on each text (the order rotating per text) on a worker
    thread, as the check runs its analyzer, so a change of load on a shared machine falls on all of them alike.
    Per function: wall-clock p50/p95, the p50 of the worker thread's CPU time (``time.thread_time``: what the
    call itself computed, much less moved by other processes than the wall clock), and the median of the
    per-text ratio of each to the first, wall and CPU."""

    def run(fn: Any, text: str) -> tuple[float, float]:
        wall, cpu = time.perf_counter(), time.thread_time()
        fn(text)
        return (time.perf_counter() - wall) * 1000, (time.thread_time() - cpu) * 1000

    names = list(fns)
    for t in texts[:2]:
        for name in names:
            await asyncio.to_thread(run, fns[name], t)
    walls: dict[str, list[float]] = {name: [] for name in names}
    cpus: dict[str, list[float]] = {name: [] for name in names}
    for i, t in enumerate(texts):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            wall, cpu = await asyncio.to_thread(run, fns[name], t)
            walls[name].append(wall)
            cpus[name].append(cpu)
    first = names[0]
    return {
        name: {
            "p50_ms": round(statistics.median(walls[name]), 1),
            "p95_ms": round(pct(walls[name], 0.95), 1),
            "cpu_p50_ms": round(statistics.median(cpus[name]), 1),
            "n": len(walls[name]),
            "per-text ratio to the first (wall, cpu)": (
                round(statistics.median(a / b for a, b in zip(walls[name], walls[first], strict=True)), 2),
                round(statistics.median(a / b for a, b in zip(cpus[name], cpus[first], strict=True)), 2),
            ),
        }
        for name in names
    }


def spacy_baselines(model: str) -> tuple[Any, Any]:
    """spaCy's own pipeline of ``model`` (every component, as ``spacy.load`` gives it) and, loaded apart, its
    ``ner`` pipe alone with the check's matrix products (numpy): the part of the check that is spaCy's."""
    import spacy

    full = spacy.load(model)
    ner = spacy.load(model)
    keep_only_ner(ner)
    use_numpy_matmul(ner)
    return full, ner


async def measure(n: int, pii_only_rows: bool = False) -> dict[str, Any]:
    off = {"enabled": False}
    both = GuardrailSystem()
    pii_only = GuardrailSystem({"guardrails": {"checks": {"classification": off, "exfiltration": off}}})
    cls_only = GuardrailSystem({"guardrails": {"checks": {"pii": off, "exfiltration": off}}})
    for system in (both, pii_only, cls_only):
        await system.warmup()
    pii_check: Any = pii_only.checks[0]
    [cls_check] = cls_only.checks
    spacy_pipeline, ner_alone = spacy_baselines(pii_check.config.spacy_model)
    ctx = CheckContext(stage=Stage.INPUT)
    out: dict[str, Any] = {"load_before": os.getloadavg()[0]}
    for size, count in ((1024, n), (20_480, max(10, n // 2))):
        texts = documents(size, count)
        row: dict[str, Any] = (
            {}
            if pii_only_rows
            else {
                "check_input (pii + classification)": await timed(both.check_input, texts),
                "baseline: classification check alone": await timed(lambda t: cls_check.run(t, ctx), texts),
            }
        )
        # the PII check and spaCy's pipeline on the same texts, interleaved (issue 29's goal: within 1.2 x)
        row |= await timed_interleaved(
            {
                "baseline: pii check alone": pii_check.analyze,  # what run() does on its worker thread
                "baseline: spaCy pipeline alone": spacy_pipeline,
                "baseline: spaCy ner pipe alone": ner_alone,
            },
            texts,
        )
        pii, full, ner = (
            row[k]
            for k in (
                "baseline: pii check alone",
                "baseline: spaCy pipeline alone",
                "baseline: spaCy ner pipe alone",
            )
        )
        pii_ms = pii["p50_ms"]
        for name, base in (("spaCy pipeline", full), ("spaCy ner pipe", ner)):
            row[f"ratio: pii check / {name} (wall p50, cpu p50)"] = (
                round(pii_ms / base["p50_ms"], 2),
                round(pii["cpu_p50_ms"] / base["cpu_p50_ms"], 2),
            )
        if not pii_only_rows:
            slowest = max(pii_ms, row["baseline: classification check alone"]["p50_ms"])
            row["ratio: check_input / slower check alone"] = round(
                row["check_input (pii + classification)"]["p50_ms"] / slowest, 2
            )
        out[f"{size // 1024} kB"] = row
    out["load_after"] = os.getloadavg()[0]
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--pii", action="store_true", help="only the PII check beside spaCy's pipeline")
    args = parser.parse_args()
    result = asyncio.run(measure(args.n, args.pii))
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "check_latency.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    for size in ("1 kB", "20 kB"):
        print(size)
        for name, value in result[size].items():
            print(f"  {name:45s} {value}")
    print(f"load average {result['load_before']:.1f} -> {result['load_after']:.1f}")


if __name__ == "__main__":
    main()
