"""PII evaluation on the presidio-research synthetic set: token-level scoring as presidio-research computes it
(IO tags over spaCy tokens, stop words and punctuation skipped, F-beta with beta=2), template-disjoint split.

Two ways to score, because the default policy does not mask every type the set labels:
- ``full``: the check configured with every labelled type it can find (places, URLs, dates, nationalities
  too), scored over all of them; per-entity thresholds tuned on train (the figure eval_detectors reports).
- ``default``: the check as shipped (default entities and thresholds), scored over the types that policy masks
  (person, street address, phone, e-mail, card, IBAN, SSN, IP, driver's licence); tokens of other labelled
  types (a city, a date) count as not-PII, so masking them counts against precision.

    .venv/bin/python bench/eval_pii.py [--split test|train] [--mode full|default|both] [--no-tune]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import string
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# presidio-research PresidioAnalyzerWrapper.presidio_entities_map (dataset type -> Presidio type)
ENTITY_MAP = {
    "PERSON": "PERSON",
    "STREET_ADDRESS": "LOCATION",
    "GPE": "LOCATION",
    "ORGANIZATION": "ORGANIZATION",
    "CREDIT_CARD": "CREDIT_CARD",
    "DATE_TIME": "DATE_TIME",
    "TITLE": "TITLE",
    "PHONE_NUMBER": "PHONE_NUMBER",
    "AGE": "AGE",
    "NRP": "NRP",
    "EMAIL_ADDRESS": "EMAIL_ADDRESS",
    "ZIP_CODE": "ZIP_CODE",
    "DOMAIN_NAME": "URL",
    "IBAN_CODE": "IBAN_CODE",
    "US_SSN": "US_SSN",
    "IP_ADDRESS": "IP_ADDRESS",
    "US_DRIVER_LICENSE": "US_DRIVER_LICENSE",
}
# Entities a default Presidio supports among the mapped ones (the evaluator keeps the model's entities).
KEEP = [
    "PERSON",
    "LOCATION",
    "NRP",
    "DATE_TIME",
    "CREDIT_CARD",
    "PHONE_NUMBER",
    "EMAIL_ADDRESS",
    "URL",
    "IBAN_CODE",
    "US_SSN",
    "IP_ADDRESS",
    "US_DRIVER_LICENSE",
]
# The labelled types the default policy masks (a street address is its own type there).
DEFAULT_SCORED = [
    "PERSON",
    "STREET_ADDRESS",
    "CREDIT_CARD",
    "PHONE_NUMBER",
    "EMAIL_ADDRESS",
    "IBAN_CODE",
    "US_SSN",
    "IP_ADDRESS",
    "US_DRIVER_LICENSE",
]
BETA = 2.0
DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "pii" / "synth_dataset_v2.json"
if not DATA.exists():
    DATA = Path("/work/shared/data/pii/synth_dataset_v2.json")


@dataclass(frozen=True)
class Mode:
    name: str
    gold_map: dict[str, str]  # dataset type -> scored type ("O" or absent: not scored as PII)
    scored: list[str]
    rename: dict[str, str] = field(default_factory=dict)  # check type -> scored type


FULL = Mode("full", ENTITY_MAP, KEEP, {"STREET_ADDRESS": "LOCATION"})
DEFAULT = Mode("default", {t: t for t in DEFAULT_SCORED}, DEFAULT_SCORED)


def load_split(path: Path, split: str) -> list[dict[str, Any]]:
    """Template-disjoint split (presidio-research splits synthetic data by template): ~70% train, 30% test."""
    data = json.loads(path.read_text())
    out = []
    for sample in data:
        h = int(hashlib.sha256(str(sample["template_id"]).encode()).hexdigest(), 16) % 10
        if (h < 7) == (split == "train"):
            out.append(sample)
    return out


def _tags(tokens: list[tuple[int, int]], spans: list[tuple[int, int, str]], keep: list[str]) -> list[str]:
    tags = []
    for a, b in tokens:
        tag = "O"
        for s, e, t in spans:
            if a < e and b > s:
                tag = t
                break
        tags.append(tag if tag in keep else "O")
    return tags


class Scorer:
    """Tokens and gold tags of a sample set computed once; ``score(predict)`` counts the predicted tags."""

    def __init__(self, samples: list[dict[str, Any]], tokenizer: Any, mode: Mode = FULL) -> None:
        from spacy.lang.en.stop_words import STOP_WORDS

        skip = set(STOP_WORDS) | set(string.punctuation) | {"", " ", "\n", "\n\n"}
        self.mode = mode
        self.items: list[tuple[str, list[tuple[int, int]], list[str]]] = []
        for sample in samples:
            text = sample["full_text"]
            tokens = [
                (t.idx, t.idx + len(t.text)) for t in tokenizer(text) if t.text.lower().strip() not in skip
            ]
            gold = [
                (s["start_position"], s["end_position"], mode.gold_map.get(s["entity_type"], "O"))
                for s in sample["spans"]
            ]
            self.items.append((text, tokens, _tags(tokens, gold, mode.scored)))

    def score(self, predict: Callable[[str], list[tuple[int, int, str]]]) -> dict[str, Any]:
        counts: Counter[tuple[str, str]] = Counter()
        rename = self.mode.rename
        for text, tokens, gold in self.items:
            pred = [(s, e, rename.get(t, t)) for s, e, t in predict(text)]
            counts.update(zip(gold, _tags(tokens, pred, self.mode.scored), strict=True))
        return score(counts, self.mode.scored)


def evaluate(
    samples: list[dict[str, Any]],
    predict: Callable[[str], list[tuple[int, int, str]]],
    tokenizer: Any,
    mode: Mode = FULL,
) -> dict[str, Any]:
    return Scorer(samples, tokenizer, mode).score(predict)


def _f(p: float, r: float) -> float:
    return (1 + BETA**2) * p * r / (BETA**2 * p + r) if p + r else 0.0


def score(counts: Counter[tuple[str, str]], scored: list[str] = KEEP) -> dict[str, Any]:
    per = {}
    for ent in scored:
        annotated = sum(v for (g, _), v in counts.items() if g == ent)
        predicted = sum(v for (_, p), v in counts.items() if p == ent)
        tp = counts[(ent, ent)]
        if annotated or predicted:
            pr = tp / predicted if predicted else 0.0
            rc = tp / annotated if annotated else 0.0
            per[ent] = {"precision": pr, "recall": rc, "f2": _f(pr, rc), "n": annotated}
    annotated = sum(v for (g, _), v in counts.items() if g != "O")
    predicted = sum(v for (_, p), v in counts.items() if p != "O")
    tp = sum(v for (g, p), v in counts.items() if g != "O" and p != "O")
    pr, rc = tp / max(1, predicted), tp / max(1, annotated)
    return {"overall": {"precision": pr, "recall": rc, "f2": _f(pr, rc), "n": annotated}, "entities": per}


def tune_thresholds(
    check: Any, raw: dict[str, list[Any]], scorer: Scorer, entities: list[str]
) -> dict[str, float]:
    """Per-entity thresholds by coordinate descent over a coarse grid, on the analyzer's raw results."""

    def f2(th: dict[str, float]) -> float:
        def predict(text: str) -> list[tuple[int, int, str]]:
            return [(f.start or 0, f.end or 0, f.type) for f in check.select(text, raw[text], th.__getitem__)]

        return float(scorer.score(predict)["overall"]["f2"])

    th = dict.fromkeys(entities, 0.5)
    best = f2(th)
    for _ in range(2):
        for ent in entities:
            for v in (0.25, 0.35, 0.45, 0.55, 0.65, 0.75, 0.86, 1.01):
                trial = {**th, ent: v}
                value = f2(trial)
                if value > best + 1e-4:
                    best, th = value, trial
    return th


def run(mode: Mode, split: str = "test", tune: bool = True) -> dict[str, Any]:
    """Score the check in ``mode`` on ``split``; ``full`` tunes thresholds on train first (unless ``tune`` is
    False), ``default`` runs the shipped configuration."""
    from stockade.guardrails.checks.config import DEFAULT_PII_ENTITIES, PiiConfig
    from stockade.guardrails.checks.pii.check import PiiCheck

    entities = [*KEEP, "STREET_ADDRESS"] if mode is FULL else list(DEFAULT_PII_ENTITIES)
    check = PiiCheck(PiiConfig(entities=entities))
    analyzer = check.analyzer()
    tokenizer = analyzer.engine.nlp_engine.nlp["en"].tokenizer
    thresholds: dict[str, float] | None = None
    if mode is FULL and tune:
        train = load_split(DATA, "train")
        raw = {
            s["full_text"]: analyzer.analyze(
                s["full_text"], language="en", entities=entities, score_threshold=0.0
            )
            for s in train
        }
        thresholds = tune_thresholds(check, raw, Scorer(train, tokenizer, mode), entities)
        check = PiiCheck(
            PiiConfig(entities=entities, entity_policies={e: {"threshold": t} for e, t in thresholds.items()})  # type: ignore[misc]
        )
    samples = load_split(DATA, split)
    res = Scorer(samples, tokenizer, mode).score(
        lambda t: [(f.start or 0, f.end or 0, f.type) for f in check.analyze(t)]
    )
    return {"mode": mode.name, "split": split, "n": len(samples), "thresholds": thresholds, **res}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=["test", "train"], default="test")
    parser.add_argument("--mode", choices=["full", "default", "both"], default="both")
    parser.add_argument("--no-tune", action="store_true", help="full mode: keep the default thresholds.")
    args = parser.parse_args()
    modes = [FULL, DEFAULT] if args.mode == "both" else [FULL if args.mode == "full" else DEFAULT]
    for mode in modes:
        res = run(mode, args.split, tune=not args.no_tune)
        o = res["overall"]
        print(
            f"[{mode.name}] {args.split} ({res['n']} sentences): P {o['precision']:.3f} R {o['recall']:.3f} "
            f"F2 {o['f2']:.3f}" + (f"; thresholds {res['thresholds']}" if res["thresholds"] else "")
        )
        for ent, v in res["entities"].items():
            print(f"  {ent:<18} P {v['precision']:.3f} R {v['recall']:.3f} F2 {v['f2']:.3f} (n {v['n']})")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
