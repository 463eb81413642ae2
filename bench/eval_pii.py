"""PII evaluation helpers for eval_detectors.py: presidio-research style token-level scoring (IO tags over
spaCy tokens, stop words and punctuation skipped, F-beta with beta=2), on a template-disjoint split."""

from __future__ import annotations

import hashlib
import json
import string
from collections import Counter
from collections.abc import Callable
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
BETA = 2.0


def load_split(path: Path, split: str) -> list[dict[str, Any]]:
    """Template-disjoint split (presidio-research splits synthetic data by template): ~70% train, 30% test."""
    data = json.loads(path.read_text())
    out = []
    for sample in data:
        h = int(hashlib.sha256(str(sample["template_id"]).encode()).hexdigest(), 16) % 10
        if (h < 7) == (split == "train"):
            out.append(sample)
    return out


def _tags(tokens: list[Any], spans: list[tuple[int, int, str]]) -> list[str]:
    tags = []
    for tok in tokens:
        a, b = tok.idx, tok.idx + len(tok.text)
        tag = "O"
        for s, e, t in spans:
            if a < e and b > s:
                tag = t
                break
        tags.append(tag)
    return [t if t in KEEP else "O" for t in tags]


def evaluate(
    samples: list[dict[str, Any]], predict: Callable[[str], list[tuple[int, int, str]]], tokenizer: Any
) -> dict[str, Any]:
    from spacy.lang.en.stop_words import STOP_WORDS

    skip = set(STOP_WORDS) | set(string.punctuation) | {"", " ", "\n", "\n\n"}
    counts: Counter[tuple[str, str]] = Counter()
    for sample in samples:
        text = sample["full_text"]
        tokens = [t for t in tokenizer(text)]
        gold = [
            (s["start_position"], s["end_position"], ENTITY_MAP.get(s["entity_type"], "O"))
            for s in sample["spans"]
        ]
        pred = predict(text)
        for tok, g, p in zip(tokens, _tags(tokens, gold), _tags(tokens, pred), strict=True):
            if tok.text.lower().strip() in skip:
                continue
            counts[(g, p)] += 1
    return score(counts)


def _f(p: float, r: float) -> float:
    return (1 + BETA**2) * p * r / (BETA**2 * p + r) if p + r else 0.0


def score(counts: Counter[tuple[str, str]]) -> dict[str, Any]:
    per = {}
    for ent in KEEP:
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
