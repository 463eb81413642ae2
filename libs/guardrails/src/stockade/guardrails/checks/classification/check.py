"""The content-classification check: embed the text, score it against each route, flag routes that fire."""

from __future__ import annotations

import asyncio
import logging

from stockade.guardrails.checks.base import CheckContext
from stockade.guardrails.checks.classification.encoders import Encoder, build_encoder
from stockade.guardrails.checks.classification.fit import encode_all, encoder_fingerprint
from stockade.guardrails.checks.classification.router import Route, RouterModel, Scorer
from stockade.guardrails.checks.classification.routes import default_routes
from stockade.guardrails.checks.config import ClassificationConfig, ContentChecksConfig
from stockade.guardrails.verdict import Action, CheckResult, Finding

log = logging.getLogger(__name__)


class ClassificationCheck:
    name = "classification"

    def __init__(self, config: ClassificationConfig, *, encoder: Encoder | None = None) -> None:
        self.config = config
        self.stages = frozenset(config.stages)
        self.encoder = encoder if encoder is not None else build_encoder(config)
        self._fingerprint = encoder_fingerprint(config) if encoder is None else type(encoder).__name__
        self._scorer: Scorer | None = None
        self._lock = asyncio.Lock()

    async def warmup(self) -> None:
        await self._ensure_scorer()
        await self.encoder.encode(["warm up"])

    async def _ensure_scorer(self) -> Scorer:
        if self._scorer is not None:
            return self._scorer
        async with self._lock:
            if self._scorer is None:
                self._scorer = Scorer(await self._load_model())
        return self._scorer

    async def _load_model(self) -> RouterModel:
        cfg = self.config
        if cfg.fitted_path:
            model = RouterModel.load(cfg.fitted_path)
            if model.encoder != self._fingerprint:
                log.warning(
                    "fitted routes were embedded with %s; re-embedding with %s",
                    model.encoder,
                    self._fingerprint,
                )
                for route in model.routes:
                    route.embeddings = await encode_all(self.encoder, route.utterances)
                model.benign_embeddings = await encode_all(self.encoder, model.benign)
            return model
        routes = cfg.routes if cfg.routes is not None else default_routes()
        built = [
            Route(
                name, list(r.utterances), r.threshold, r.action, await encode_all(self.encoder, r.utterances)
            )
            for name, r in routes.items()
        ]
        return RouterModel(built, top_k=1, encoder=self._fingerprint)

    async def run(self, text: str, ctx: CheckContext) -> CheckResult:
        scorer = await self._ensure_scorer()
        [vector] = await self.encoder.encode([text])
        return self.classify_vector(scorer, vector)

    async def scorer(self) -> Scorer:
        """The loaded routes (for batch evaluation with :meth:`classify_vector`)."""
        return await self._ensure_scorer()

    def classify_vector(self, scorer: Scorer, vector: list[float]) -> CheckResult:
        scores = scorer.scores(vector)
        findings = []
        for route in scorer.model.routes:
            score = scores[route.name]
            if score >= route.threshold:
                findings.append(
                    Finding(
                        check=self.name,
                        type=route.name,
                        score=_unit(score),
                        action=Action.BLOCK if route.action == "block" else Action.WARN,
                        detail={"similarity": round(score, 4), "threshold": round(route.threshold, 4)},
                    )
                )
        action = Action.strongest([f.action for f in findings])
        top = max(scores.values(), default=0.0)
        return CheckResult(check=self.name, action=action, findings=findings, score=_unit(top))


def _unit(x: float) -> float:
    return round(min(1.0, max(0.0, x)), 4)


def build(config: ContentChecksConfig) -> ClassificationCheck:
    return ClassificationCheck(config.classification)
