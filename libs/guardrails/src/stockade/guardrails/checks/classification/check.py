"""The content-classification check: embed the text, score it against each route, flag routes that fire.

With fitted prefilter bands (see prefilter.py), a static-embedding first stage decides the clear cases and only
the uncertain ones are embedded by the full encoder."""

from __future__ import annotations

import asyncio
import logging
import os

from stockade.guardrails.checks.base import CheckContext, ContentCheck
from stockade.guardrails.checks.classification.builtin_routes import default_routes
from stockade.guardrails.checks.classification.encoders import (
    Encoder,
    build_encoder,
    build_prefilter_encoder,
    encode_all,
    encoder_fingerprint,
)
from stockade.guardrails.checks.classification.prefilter import Decision, Prefilter
from stockade.guardrails.checks.classification.semantic_router import Route, RouterModel, Scorer
from stockade.guardrails.checks.config import ClassificationConfig, ContentChecksConfig
from stockade.guardrails.verdict import Action, CheckResult, Finding

log = logging.getLogger(__name__)


INLINE_CHARS = 16_384  # the static stage runs inline up to here (about 10 ms); longer texts go to a thread


class ClassificationCheck:
    name = "classification"
    starts_inline = True  # the runner starts it before the others (see prefilter_decision)

    def __init__(
        self,
        config: ClassificationConfig,
        *,
        encoder: Encoder | None = None,
        prefilter_encoder: Encoder | None = None,
        prefilter_fingerprint: str = "",
    ) -> None:
        """``encoder`` / ``prefilter_encoder`` replace the configured ones (tests, custom models); a given
        prefilter encoder is used only with fitted bands whose encoder name equals ``prefilter_fingerprint``."""
        self.config = config
        self.stages = frozenset(config.stages)
        self.encoder = encoder if encoder is not None else build_encoder(config)
        self._fingerprint = encoder_fingerprint(config) if encoder is None else type(encoder).__name__
        self._static: Encoder | None = prefilter_encoder
        self._static_fingerprint = prefilter_fingerprint
        if prefilter_encoder is None and encoder is None and config.prefilter and config.fitted_path:
            static = build_prefilter_encoder(config)
            if static is not None:
                self._static, self._static_fingerprint = static, static.fingerprint
        self._scorer: Scorer | None = None
        self._prefilter: Prefilter | None = None
        self._lock = asyncio.Lock()

    async def warmup(self) -> None:
        await self._ensure_scorer()
        await self.encoder.encode(["warm up"])

    async def _ensure_scorer(self) -> Scorer:
        if self._scorer is not None:
            return self._scorer
        async with self._lock:
            if self._scorer is None:
                model = await self._load_model()
                self._prefilter = await self._load_prefilter(model)
                self._scorer = Scorer(model)
        return self._scorer

    @property
    def prefilter(self) -> Prefilter | None:
        """The static first stage in use (after warm-up or the first run), or None."""
        return self._prefilter

    async def _load_prefilter(self, model: RouterModel) -> Prefilter | None:
        bands = model.prefilter
        if not self.config.prefilter or bands is None or self._static is None:
            return None
        if bands.encoder != self._static_fingerprint:
            log.warning(
                "prefilter bands were fitted with %s, not %s; every text goes to the full encoder",
                bands.encoder,
                self._static_fingerprint,
            )
            return None
        return await Prefilter.build(self._static, bands, model)

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
        prefilter = self._prefilter
        if prefilter is not None:
            decision = await self.prefilter_decision(text)
            if decision is not None:
                return self._decided(scorer, prefilter, decision)
        [vector] = await self.encoder.encode([text])
        return self.classify_vector(scorer, vector)

    async def prefilter_decision(self, text: str) -> Decision | None:
        """The static stage's decision on ``text``, or None when it is uncertain (or there is no prefilter).

        Texts up to ``INLINE_CHARS`` are embedded on the calling thread, before the first await: the stage is
        about 1 ms of mostly GIL-holding work, and run in a worker thread beside the PII check's thread the two
        hand the GIL back and forth and both slow down (measured: +4 to +7 ms on 1 kB). The runner starts
        this check first (``starts_inline``), so this step runs before the other checks' threads start."""
        if self._prefilter is None:
            return None
        encoder = self._prefilter.encoder
        encode_sync = getattr(encoder, "encode_sync", None)
        if encode_sync is not None and len(text) <= INLINE_CHARS:
            [static] = encode_sync([text])
        else:
            [static] = await encoder.encode([text])
        return self._prefilter.decide(static)

    def _decided(self, scorer: Scorer, prefilter: Prefilter, decision: Decision) -> CheckResult:
        thresholds = {name: band.high for name, band in prefilter.bands.bands.items()}
        return self._result(scorer, decision.scores, set(decision.fired), thresholds, "prefilter")

    async def scorer(self) -> Scorer:
        """The loaded routes (for batch evaluation with :meth:`classify_vector`)."""
        return await self._ensure_scorer()

    def classify_vector(self, scorer: Scorer, vector: list[float]) -> CheckResult:
        scores = scorer.scores(vector)
        routes = scorer.model.routes
        fired = {r.name for r in routes if scores[r.name] >= r.threshold}
        return self._result(scorer, scores, fired, {r.name: r.threshold for r in routes}, "encoder")

    def _result(
        self,
        scorer: Scorer,
        scores: dict[str, float],
        fired: set[str],
        thresholds: dict[str, float],
        stage: str,
    ) -> CheckResult:
        """One finding per fired route (in route order), the strongest action, the top score as the risk."""
        findings = [
            Finding(
                check=self.name,
                type=route.name,
                score=_unit(scores[route.name]),
                action=Action.BLOCK if route.action == "block" else Action.WARN,
                detail={
                    "stage": stage,
                    "similarity": round(scores[route.name], 4),
                    "threshold": round(thresholds[route.name], 4),
                },
            )
            for route in scorer.model.routes
            if route.name in fired
        ]
        action = Action.strongest([f.action for f in findings])
        top = max(scores.values(), default=0.0)
        return CheckResult(check=self.name, action=action, findings=findings, score=_unit(top))


def _unit(x: float) -> float:
    return round(min(1.0, max(0.0, x)), 4)


def resolve_method(config: ClassificationConfig) -> str:
    """``model`` (the trained classifier) unless routing is configured: ``method``, else routes when routes,
    ``fitted_path``, ``encoder_type`` or the ``ENCODER_TYPE`` environment variable is set."""
    if config.method is not None:
        return config.method
    configured = config.routes is not None or config.fitted_path or config.encoder_type is not None
    return "routes" if configured or os.environ.get("ENCODER_TYPE", "").strip() else "model"


def build(config: ContentChecksConfig) -> ContentCheck:
    cfg = config.classification
    check: ContentCheck
    if resolve_method(cfg) == "model":
        from stockade.guardrails.checks.classification.model_check import ModelClassificationCheck

        check = ModelClassificationCheck(cfg)
    else:
        check = ClassificationCheck(cfg)
    if cfg.judge is not None and cfg.judge.enabled:
        from stockade.guardrails.checks.classification.judged_check import JudgedCheck

        return JudgedCheck(check, cfg.judge)
    return check
