"""Latency of check_input with the default checks (PII + the trained classifier) on 1 kB and 20 kB inputs.

Not a timed test: it prints p50/p95 per size next to baselines measured in the same run (the PII check alone,
the classifier alone, spaCy's pipeline alone), so a noisy machine shows as noisy baselines too.

spaCy's pipeline alone is the PII check's model as spaCy loads it (``spacy.load(model)``, every component)
called on the same text; beside it, its ``ner`` pipe alone (the only component the check runs, see the
guardrails README, "PII/PHI"). The goal (issue 29): the PII check within 1.2 x spaCy's pipeline.

    .venv/bin/python bench/check_latency.py [--n 40]
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
from stockade.guardrails.checks.pii.nlp import keep_only_ner

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


def spacy_baselines(model: str) -> tuple[Any, Any]:
    """spaCy's own pipeline of ``model`` (every component, as loaded) and, loaded apart, its ``ner`` pipe alone."""
    import spacy

    full = spacy.load(model)
    ner = spacy.load(model)
    keep_only_ner(ner)
    return full, ner


def in_thread(nlp: Any) -> Any:
    """``nlp(text)`` on a worker thread, as the check runs its analyzer (same thread hop in both figures)."""

    async def call(text: str) -> Any:
        return await asyncio.to_thread(nlp, text)

    return call


async def measure(n: int) -> dict[str, Any]:
    off = {"enabled": False}
    both = GuardrailSystem()
    pii_only = GuardrailSystem({"guardrails": {"checks": {"classification": off, "exfiltration": off}}})
    cls_only = GuardrailSystem({"guardrails": {"checks": {"pii": off, "exfiltration": off}}})
    for system in (both, pii_only, cls_only):
        await system.warmup()
    [pii_check] = pii_only.checks
    [cls_check] = cls_only.checks
    spacy_pipeline, ner_alone = spacy_baselines(pii_check.config.spacy_model)
    ctx = CheckContext(stage=Stage.INPUT)
    out: dict[str, Any] = {"load_before": os.getloadavg()[0]}
    for size, count in ((1024, n), (20_480, max(10, n // 2))):
        texts = documents(size, count)
        row = {
            "check_input (pii + classification)": await timed(both.check_input, texts),
            "baseline: pii check alone": await timed(lambda t: pii_check.run(t, ctx), texts),
            "baseline: classification check alone": await timed(lambda t: cls_check.run(t, ctx), texts),
            "baseline: spaCy pipeline alone": await timed(in_thread(spacy_pipeline), texts),
            "baseline: spaCy ner pipe alone": await timed(in_thread(ner_alone), texts),
        }
        row["ratio: pii check / spaCy pipeline"] = round(
            row["baseline: pii check alone"]["p50_ms"] / row["baseline: spaCy pipeline alone"]["p50_ms"], 2
        )
        slowest = max(
            row["baseline: pii check alone"]["p50_ms"], row["baseline: classification check alone"]["p50_ms"]
        )
        row["ratio: check_input / slower check alone"] = round(
            row["check_input (pii + classification)"]["p50_ms"] / slowest, 2
        )
        out[f"{size // 1024} kB"] = row
    out["load_after"] = os.getloadavg()[0]
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=40)
    args = parser.parse_args()
    result = asyncio.run(measure(args.n))
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "check_latency.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    for size in ("1 kB", "20 kB"):
        print(size)
        for name, value in result[size].items():
            print(f"  {name:45s} {value}")
    print(f"load average {result['load_before']:.1f} -> {result['load_after']:.1f}")


if __name__ == "__main__":
    main()
