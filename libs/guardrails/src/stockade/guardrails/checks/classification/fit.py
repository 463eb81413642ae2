"""Fit step: tune route thresholds (and take route utterances) from labelled data, then save them.

Labelled texts whose label names a route become that route's utterances; texts labelled ``benign`` become
the benign reference set. Each training text is scored leave-one-out (its own embedding excluded), and each
route's threshold is the one with the best F1 whose false-positive rate on benign texts stays within
``max_fpr``. Routes without labelled examples keep their built-in utterances and get the lowest threshold
that keeps their own false-positive rate within ``max_fpr / 4``.

    python -m stockade.guardrails.checks.classification.fit --data train.csv --out routes.json
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stockade.guardrails.checks.classification.builtin_routes import default_routes
from stockade.guardrails.checks.classification.encoders import (
    Encoder,
    build_encoder,
    build_prefilter_encoder,
    encode_all,
    encoder_fingerprint,
)
from stockade.guardrails.checks.classification.semantic_router import (
    Band,
    PrefilterBands,
    Route,
    RouterModel,
    top_k_mean,
    top_k_means,
)
from stockade.guardrails.checks.config import ClassificationConfig, RouteConfig


@dataclass(frozen=True)
class RouteFit:
    route: str
    threshold: float
    f1: float
    precision: float
    recall: float
    fpr: float


async def fit_router(
    encoder: Encoder,
    texts: list[str],
    labels: list[str],
    *,
    benign_label: str = "benign",
    base_routes: dict[str, RouteConfig] | None = None,
    top_k: int = 5,
    max_fpr: float = 0.02,
    encoder_name: str = "",
) -> tuple[RouterModel, list[RouteFit]]:
    base = base_routes if base_routes is not None else default_routes()
    vectors = await encode_all(encoder, texts)
    benign_idx = [i for i, label in enumerate(labels) if label == benign_label]
    benign_vecs = [vectors[i] for i in benign_idx]
    names = sorted({label for label in labels if label != benign_label} | set(base))
    routes: list[Route] = []
    fits: list[RouteFit] = []
    for name in names:
        member_idx = [i for i, label in enumerate(labels) if label == name]
        action = base[name].action if name in base else "block"
        if member_idx:
            utterances = [texts[i] for i in member_idx]
            embeddings = [vectors[i] for i in member_idx]
        else:
            utterances = list(base[name].utterances)
            embeddings = await encode_all(encoder, utterances)
        scores = loo_scores(vectors, member_idx, embeddings, benign_vecs, benign_idx, top_k)
        positive = [label == name for label in labels]
        is_benign = [label == benign_label for label in labels]
        fit = _best_threshold(name, scores, positive, is_benign, max_fpr if member_idx else max_fpr / 4)
        fits.append(fit)
        routes.append(Route(name, utterances, fit.threshold, action, embeddings))
    model = RouterModel(routes, [texts[i] for i in benign_idx], benign_vecs, top_k, encoder_name)
    return model, fits


def loo_scores(
    vectors: list[list[float]],
    member_idx: list[int],
    embeddings: list[list[float]],
    benign_vecs: list[list[float]],
    benign_idx: list[int],
    top_k: int,
) -> list[float]:
    """Every text's route score, leaving the text itself out of the route's and the benign examples."""
    member_pos = {i: p for p, i in enumerate(member_idx)}
    benign_pos = {i: p for p, i in enumerate(benign_idx)}
    route = top_k_means(vectors, embeddings, top_k, [member_pos.get(i) for i in range(len(vectors))])
    if not benign_vecs:
        return route
    benign = top_k_means(vectors, benign_vecs, top_k, [benign_pos.get(i) for i in range(len(vectors))])
    return [r - b for r, b in zip(route, benign, strict=True)]


async def fit_prefilter(
    encoder: Encoder,
    fingerprint: str,
    model: RouterModel,
    texts: list[str],
    labels: list[str],
    *,
    benign_label: str = "benign",
    max_miss: float = 0.02,
    max_fpr: float = 0.01,
) -> tuple[PrefilterBands, float]:
    """Fit the static stage's bands for ``model`` (see prefilter.py); returns them and the share of the training
    texts the full encoder would still see."""
    vectors = await encode_all(encoder, texts)
    benign_idx = [i for i, label in enumerate(labels) if label == benign_label]
    benign_vecs = [vectors[i] for i in benign_idx]
    bands: dict[str, Band] = {}
    route_scores: dict[str, list[float]] = {}
    for route in model.routes:
        member_idx = [i for i, label in enumerate(labels) if label == route.name]
        if member_idx:
            embeddings = [vectors[i] for i in member_idx]
            scores = loo_scores(vectors, member_idx, embeddings, benign_vecs, benign_idx, model.top_k)
            positives = [scores[i] for i in member_idx]
            high = upper_quantile([scores[i] for i in benign_idx], max_fpr)
        else:  # no labelled examples: the route's own utterances, each scored against the others
            embeddings = await encode_all(encoder, route.utterances)
            scores = loo_scores(vectors, [], embeddings, benign_vecs, benign_idx, model.top_k)
            positives = [
                top_k_mean(e, embeddings, model.top_k, exclude=p) - top_k_mean(e, benign_vecs, model.top_k)
                for p, e in enumerate(embeddings)
            ]
            high = math.inf
        low = lower_quantile(positives, max_miss)
        bands[route.name] = Band(low, max(high, low))
        route_scores[route.name] = scores
    undecided = sum(
        any(bands[name].low <= route_scores[name][i] < bands[name].high for name in bands)
        for i in range(len(texts))
    )
    return PrefilterBands(fingerprint, bands), undecided / max(1, len(texts))


def lower_quantile(values: list[float], fraction: float) -> float:
    """The largest cut with at most ``fraction`` of ``values`` strictly below it."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else -math.inf


def upper_quantile(values: list[float], fraction: float) -> float:
    """The smallest cut with at most ``fraction`` of ``values`` at or above it."""
    ordered = sorted(values, reverse=True)
    allowed = int(fraction * len(ordered))
    if allowed >= len(ordered):
        return -math.inf
    return math.nextafter(ordered[allowed], math.inf)


def _best_threshold(
    name: str, scores: list[float], positive: list[bool], benign: list[bool], max_fpr: float
) -> RouteFit:
    n_pos, n_benign = sum(positive), max(1, sum(benign))
    best: RouteFit | None = None
    for t in sorted(set(scores)):
        flagged = [s >= t for s in scores]
        tp = sum(f and p for f, p in zip(flagged, positive, strict=True))
        fp = sum(f and b for f, b in zip(flagged, benign, strict=True))
        fpr = fp / n_benign
        if fpr > max_fpr:
            continue
        precision = tp / max(1, sum(flagged))
        recall = tp / max(1, n_pos)
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        if best is None or f1 > best.f1 or (n_pos == 0 and t < best.threshold):
            best = RouteFit(name, float(t), f1, precision, recall, fpr)
    return best or RouteFit(name, max(scores, default=1.0) + 1e-6, 0.0, 0.0, 0.0, 0.0)


def read_labelled_csv(path: str | Path, text_column: str, label_column: str) -> tuple[list[str], list[str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    return [r[text_column] for r in rows], [r[label_column] for r in rows]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", required=True, help="CSV with a text and a label column.")
    parser.add_argument("--out", required=True, help="Where to write the fitted routes (JSON).")
    parser.add_argument("--text-column", default="prompt")
    parser.add_argument("--label-column", default="type")
    parser.add_argument("--benign-label", default="benign")
    parser.add_argument("--encoder-type", default=None, help="minilm, sentence_transformers or openai.")
    parser.add_argument("--model-path", default="", help="sentence-transformers directory.")
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--max-fpr", type=float, default=0.02)
    parser.add_argument(
        "--no-prefilter", action="store_true", help="Do not fit the static first stage's bands."
    )
    parser.add_argument(
        "--prefilter-max-miss",
        type=float,
        default=0.02,
        help="Share of a route's examples the static stage may pass without asking the full encoder.",
    )
    parser.add_argument(
        "--prefilter-max-fpr",
        type=float,
        default=0.01,
        help="Share of benign texts the static stage may flag without asking the full encoder.",
    )
    args = parser.parse_args(argv)
    config = ClassificationConfig(encoder_type=args.encoder_type, model_path=args.model_path)
    texts, labels = read_labelled_csv(args.data, args.text_column, args.label_column)
    model, report = asyncio.run(
        fit_all(
            config,
            texts,
            labels,
            benign_label=args.benign_label,
            top_k=args.top_k,
            max_fpr=args.max_fpr,
            prefilter=not args.no_prefilter,
            prefilter_max_miss=args.prefilter_max_miss,
            prefilter_max_fpr=args.prefilter_max_fpr,
        )
    )
    model.save(args.out)
    print(json.dumps(report, indent=2))


async def fit_all(
    config: ClassificationConfig,
    texts: list[str],
    labels: list[str],
    *,
    benign_label: str = "benign",
    top_k: int = 5,
    max_fpr: float = 0.02,
    prefilter: bool = True,
    prefilter_max_miss: float = 0.02,
    prefilter_max_fpr: float = 0.01,
) -> tuple[RouterModel, dict[str, Any]]:
    """Fit the routes with the configured encoder and, when it is local, the static stage's bands."""
    print(f"fitting routes on {len(texts)} texts ...", flush=True)
    model, fits = await fit_router(
        build_encoder(config),
        texts,
        labels,
        benign_label=benign_label,
        top_k=top_k,
        max_fpr=max_fpr,
        encoder_name=encoder_fingerprint(config),
    )
    report: dict[str, Any] = {"routes": [f.__dict__ for f in fits]}
    static = build_prefilter_encoder(config) if prefilter else None
    if static is not None:
        print("fitting the static prefilter (distils token vectors on first use) ...", flush=True)
        model.prefilter, escalated = await fit_prefilter(
            static,
            static.fingerprint,
            model,
            texts,
            labels,
            benign_label=benign_label,
            max_miss=prefilter_max_miss,
            max_fpr=prefilter_max_fpr,
        )
        report["prefilter"] = {**model.prefilter.to_json(), "escalated_share_of_training_texts": escalated}
    return model, report


if __name__ == "__main__":
    main()
