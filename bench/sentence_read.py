"""How many of a short document's top-window sentences the sentence rule should read (`sentences.read` in
classifier.json; classifier-measurements.md, eleventh round). Not a timed test.

Each reading is a model directory's ``classifier.json`` calibrated for it by ``calibrate_decision.py`` (run once
per reading with ``sentences.read`` set, ``--write``, then copy the file aside). Fresh 1 kB documents of the
calibration's benign sources (other documents than it drew: seed 2029), and the same documents with one attack
planted, are scored by every reading. Prints, per reading, clean documents flagged and planted attacks caught
under its own calibrated thresholds at every preset, and, at ``balanced``, the planted attacks caught when the
sentence threshold is moved until at most n clean documents are flagged (the window rules as calibrated): a
comparison at the same false-positive count.

    .venv/bin/python bench/sentence_read.py --reading all=0:/tmp/all.json --reading one=1:/tmp/one.json
"""

from __future__ import annotations

import argparse
import json
import random
from collections import defaultdict
from dataclasses import replace

from calibrate_decision import OVER_DEFENCE, PROMPT_SOURCES, documents, plant
from classifier_data import cap_per_source, load_all
from window_scores import model_dir

from stockade.guardrails.checks.classification.decision import check_result
from stockade.guardrails.checks.classification.model import load
from stockade.guardrails.checks.config import ClassificationConfig

SKIP = {"synth_contrast_docs", "synth_contrast_requests", "synth_first_minute", "synth_languages"}
PRESETS = ("strict", "balanced", "permissive")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--reading",
        action="append",
        required=True,
        help="NAME=K:PATH (K sentences, 0 = all; its classifier.json)",
    )
    parser.add_argument("--docs", type=int, default=20, help="clean 1 kB documents per benign source")
    args = parser.parse_args()
    readings = {}
    for spec in args.reading:
        name, rest = spec.split("=", 1)
        k, path = rest.split(":", 1)
        with open(path, encoding="utf-8") as f:
            readings[name] = (int(k), json.load(f))
    rows = [e for e in load_all() if e.source not in SKIP]
    by_source: dict[str, list[str]] = defaultdict(list)
    for e in rows:
        if e.label == "benign" and e.source not in OVER_DEFENCE and e.source not in PROMPT_SOURCES:
            by_source[e.source].append(e.text)
    attack_rows = cap_per_source([e for e in rows if e.label != "benign"], 30, seed=9)
    attacks = [e.text for e in attack_rows if len(e.text) <= 1500]
    model = load(str(model_dir()))
    configs = {p: ClassificationConfig(preset=p) for p in PRESETS}
    rng = random.Random(2029)
    # (reading, preset, clean or planted) -> flagged per document; (reading, clean or planted) -> at balanced,
    # (window rules fired, best sentence's score)
    flags: dict[tuple[str, str, str], list[bool]] = defaultdict(list)
    parts: dict[tuple[str, str], list[tuple[bool, float]]] = defaultdict(list)
    for n, (_source, texts) in enumerate(sorted(by_source.items()), 1):
        for doc in documents(texts, 1000, args.docs, rng):
            planted = plant(doc, rng.choice(attacks), rng)
            for kind, text in (("clean", doc), ("planted", planted)):
                for name, (k, meta) in readings.items():
                    model.sentence_read = k
                    s = model.score(text, max_windows=4096)
                    if not 1 < s.windows <= model.sentence_max_windows:
                        continue
                    for preset, config in configs.items():
                        flags[(name, preset, kind)].append(bool(check_result("c", s, meta, config).findings))
                    windows_only = check_result("c", replace(s, sentence_kind=""), meta, configs["balanced"])
                    parts[(name, kind)].append((bool(windows_only.findings), s.sentence_attack))
        print(f"[{n}/{len(by_source)}] sources scored", flush=True)
    for preset in PRESETS:
        for name in readings:
            clean, caught = flags[(name, preset, "clean")], flags[(name, preset, "planted")]
            print(
                f"{preset:10s} {name:6s} clean flagged {sum(clean)}/{len(clean)} ({sum(clean) / len(clean):.1%}), "
                f"planted caught {sum(caught)}/{len(caught)} ({sum(caught) / len(caught):.1%})"
            )
    for most in (4, 6, 8, 11):
        line = []
        for name in readings:
            clean, planted = parts[(name, "clean")], parts[(name, "planted")]
            # the lowest sentence threshold that flags at most ``most`` clean documents
            for t in sorted({s for _, s in clean + planted} | {2.0}):
                if sum(w or s >= t for w, s in clean) <= most:
                    break
            recall = sum(w or s >= t for w, s in planted) / len(planted)
            line.append(f"{name} {recall:.1%} (sentence threshold {t:.4f})")
        print(f"balanced, at most {most} clean flagged: planted caught " + "; ".join(line))


if __name__ == "__main__":
    main()
