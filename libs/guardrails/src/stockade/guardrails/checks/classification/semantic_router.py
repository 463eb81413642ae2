"""Semantic router: a text's score on a route is the mean of its top-k cosine similarities to the route's
utterances, minus the same over the benign reference utterances when there are any (a "none" route).
A route fires when its score reaches its threshold. Embeddings are L2-normalised lists of floats."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stockade.guardrails.errors import ConfigError

try:  # numpy comes with the ml extra; the endpoint encoder works without it
    import numpy as _np
except ImportError:  # pragma: no cover - exercised only without the ml extra
    _np = None  # type: ignore[assignment]


@dataclass(frozen=True)
class Band:
    low: float
    high: float = math.inf

    def to_json(self) -> dict[str, float | None]:
        return {"low": self.low, "high": None if math.isinf(self.high) else self.high}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Band:
        high = data.get("high")
        return cls(float(data["low"]), math.inf if high is None else float(high))


@dataclass
class PrefilterBands:
    """What the fit step saves: the static encoder it was fitted with, and one band per route."""

    encoder: str
    bands: dict[str, Band]

    def to_json(self) -> dict[str, Any]:
        return {"encoder": self.encoder, "bands": {k: b.to_json() for k, b in self.bands.items()}}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PrefilterBands:
        return cls(str(data["encoder"]), {k: Band.from_json(v) for k, v in data["bands"].items()})


@dataclass
class Route:
    name: str
    utterances: list[str]
    threshold: float
    action: str = "block"
    embeddings: list[list[float]] = field(default_factory=list)


@dataclass
class RouterModel:
    """Routes plus benign references; what the fit step saves."""

    routes: list[Route]
    benign: list[str] = field(default_factory=list)
    benign_embeddings: list[list[float]] = field(default_factory=list)
    top_k: int = 1
    encoder: str = ""
    prefilter: PrefilterBands | None = None

    def save(self, path: str | Path) -> None:
        data = {
            "format": "stockade.semantic-router.v1",
            "encoder": self.encoder,
            "top_k": self.top_k,
            "routes": {
                r.name: {
                    "threshold": r.threshold,
                    "action": r.action,
                    "utterances": r.utterances,
                    "embeddings": _round(r.embeddings),
                }
                for r in self.routes
            },
            "benign": {"utterances": self.benign, "embeddings": _round(self.benign_embeddings)},
        }
        if self.prefilter is not None:
            data["prefilter"] = self.prefilter.to_json()
        Path(path).write_text(json.dumps(data), encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> RouterModel:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
            routes = [
                Route(
                    name,
                    r["utterances"],
                    float(r["threshold"]),
                    r.get("action", "block"),
                    r.get("embeddings", []),
                )
                for name, r in data["routes"].items()
            ]
            benign = data.get("benign", {})
            return cls(
                routes=routes,
                benign=benign.get("utterances", []),
                benign_embeddings=benign.get("embeddings", []),
                top_k=int(data.get("top_k", 1)),
                encoder=str(data.get("encoder", "")),
                prefilter=PrefilterBands.from_json(data["prefilter"]) if data.get("prefilter") else None,
            )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ConfigError(
                f"guardrails.checks.classification.fitted_path: cannot load {path}: {exc}"
            ) from None


def _round(vectors: list[list[float]]) -> list[list[float]]:
    return [[round(v, 5) for v in vec] for vec in vectors]


def top_k_mean(query: list[float], matrix: Any, k: int, exclude: int | None = None) -> float:
    """Mean of the k highest dot products of ``query`` with the rows of ``matrix``."""
    if len(matrix) == 0:
        return 0.0
    if _np is not None:
        sims = _np.asarray(matrix) @ _np.asarray(query)
        if exclude is not None:
            sims[exclude] = -2.0
        kk = min(k, len(sims))
        return float(_np.sort(sims)[-kk:].mean())
    plain = [sum(a * b for a, b in zip(row, query, strict=True)) for row in matrix]
    if exclude is not None:
        plain[exclude] = -2.0
    best = sorted(plain)[-min(k, len(plain)) :]
    return sum(best) / len(best)


def top_k_means(
    queries: list[list[float]], matrix: list[list[float]], k: int, exclude: list[int | None]
) -> list[float]:
    """:func:`top_k_mean` of each query (row ``exclude[i]`` left out for query ``i``), in one matrix product."""
    if _np is None or not len(matrix) or not queries:
        return [top_k_mean(q, matrix, k, exclude=x) for q, x in zip(queries, exclude, strict=True)]
    sims = _np.asarray(queries, dtype=_np.float64) @ _np.asarray(matrix, dtype=_np.float64).T
    pairs = [(i, x) for i, x in enumerate(exclude) if x is not None]
    if pairs:
        sims[[i for i, _ in pairs], [x for _, x in pairs]] = -2.0
    kk = min(k, sims.shape[1])
    best = _np.partition(sims, sims.shape[1] - kk, axis=1)[:, -kk:]
    return [float(v) for v in best.mean(axis=1)]


class Scorer:
    """Pre-stacks the embeddings of a RouterModel for fast scoring."""

    def __init__(self, model: RouterModel) -> None:
        self.model = model
        stack = _np.asarray if _np is not None else list
        self._routes = [(r, stack(r.embeddings)) for r in model.routes]
        self._benign = stack(model.benign_embeddings)

    def scores(self, query: list[float]) -> dict[str, float]:
        k = self.model.top_k
        base = top_k_mean(query, self._benign, k) if len(self._benign) else 0.0
        return {r.name: top_k_mean(query, m, k) - base for r, m in self._routes}
