"""What check_context costs, and what the PII check would add on context (issue 14). Not a test: run it by hand.

    .venv/bin/python bench/context_checks.py [--repeats 7] [--sizes 1000,4000,16000,64000]

Documents are the benign e-mails, tables and code answers of data/injection/bipia_indirect.jsonl (BIPIA),
joined with blank lines up to each size, as a retrieved document or a tool result would be. Measured in one
process, one run, p50 over ``--repeats`` calls after a warm-up:

1. ``check_context`` with the default configuration (the classification check: its default stages are input
   and context);
2. the PII check alone on the same texts (what ``pii.stages: [input, output, context]`` would add per document);
3. how many benign BIPIA documents ``check_context`` blocks or warns on with the default configuration, and how
   many of the first ``--injections`` BIPIA injection documents it blocks.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path

from stockade.guardrails.system import GuardrailSystem
from stockade.guardrails.verdict import Action

DATA = Path("/work/shared/data/injection/bipia_indirect.jsonl")
OFF = {"enabled": False}


def _rows() -> list[dict[str, str]]:
    with DATA.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def _document(texts: list[str], size: int) -> str:
    out, i = "", 0
    while len(out) < size:
        out += ("\n\n" if out else "") + texts[i % len(texts)]
        i += 1
    return out[:size]


async def _p50(system: GuardrailSystem, text: str, repeats: int) -> tuple[float, str]:
    samples, action = [], ""
    for _ in range(repeats):
        started = time.perf_counter()
        verdict = await system.check_context(text, source="document")
        samples.append((time.perf_counter() - started) * 1e3)
        action = verdict.action.value
    return statistics.median(samples), action


async def main(repeats: int, sizes: list[int], injections: int) -> None:
    rows = _rows()
    benign = [r["text"] for r in rows if r["label"] == "benign"]
    attacks = [r["text"] for r in rows if r["label"] == "injection"][:injections]
    default = GuardrailSystem()
    pii_only = GuardrailSystem(
        pii={"stages": ["context"], "timeout_s": 300}, classification=OFF, exfiltration=OFF
    )  # no timeout: the time it really takes (the default timeout_s is 5)
    await default.warmup()
    await pii_only.warmup()
    await default.check_context(benign[0], source="document")
    await pii_only.check_context(benign[0], source="document")

    print(f"p50 of {repeats} calls (ms) | check_context, default config | PII check alone")
    for size in sizes:
        text = _document(benign, size)
        ctx_ms, ctx_action = await _p50(default, text, repeats)
        pii_ms, _ = await _p50(pii_only, text, repeats)
        print(f"{size:>7,} chars | {ctx_ms:8.1f} ({ctx_action}) | {pii_ms:8.1f}")

    flagged = blocked = 0
    for text in benign:
        verdict = await default.check_context(text, source="document")
        flagged += verdict.action is not Action.ALLOW
        blocked += verdict.blocked
    caught = sum([(await default.check_context(t, source="document")).blocked for t in attacks])
    print(
        f"benign BIPIA documents: {blocked}/{len(benign)} blocked, {flagged}/{len(benign)} blocked or warned"
    )
    print(f"BIPIA injection documents: {caught}/{len(attacks)} blocked")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--sizes", default="1000,4000,16000,64000")
    parser.add_argument("--injections", type=int, default=300)
    args = parser.parse_args()
    asyncio.run(main(args.repeats, [int(s) for s in args.sizes.split(",")], args.injections))
