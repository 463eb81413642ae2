"""The content-classification check with the trained classifier (``method: model``, the default).

One finding per class that reaches its threshold, with the class probability as its score and the character
span of the window it came from; the stage decides the thresholds (``context_thresholds`` for documents and tool
output, ``thresholds`` for user input). The model runs in a worker thread; it loads once per process.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from stockade.guardrails.checks.base import CheckContext
from stockade.guardrails.checks.classification.backend_loader import load_backend
from stockade.guardrails.checks.classification.backends import ClassifierBackend
from stockade.guardrails.checks.classification.decision import check_result
from stockade.guardrails.checks.classification.model import (
    Scores,
    default_model_dir,
    load,
)
from stockade.guardrails.checks.config import AttackClass, ClassificationConfig, Stage
from stockade.guardrails.verdict import Action, CheckResult, Finding

CLASSES: tuple[AttackClass, ...] = ("jailbreak", "injection", "malicious")
_ACTIONS = {"block": Action.BLOCK, "warn": Action.WARN, "allow": Action.ALLOW}


class ModelClassificationCheck:
    name = "classification"

    def __init__(self, config: ClassificationConfig, *, classifier: ClassifierBackend | None = None) -> None:
        self.config = config
        self.stages = frozenset(config.stages)
        self._classifier = classifier

    def _model(self) -> ClassifierBackend:
        """The shipped classifier (``classifier_path`` or the model package), or the backend of ``model_path``
        or ``remote`` (backends.py)."""
        if self._classifier is None:
            self._classifier = load_backend(self.config)
        if self._classifier is None:
            path = self.config.classifier_path
            directory = Path(path).expanduser() if path else default_model_dir()
            self._classifier = load(str(directory), self.config.threads)
        return self._classifier

    async def warmup(self) -> None:
        model = await asyncio.to_thread(self._model)
        await asyncio.to_thread(model.score, "warm up", max_windows=self.config.max_windows)

    def thresholds(self, stage: Stage) -> dict[str, float]:
        """The thresholds in force on ``stage``: configured, else the shipped model's tuned ones."""
        out: dict[str, float] = dict(self._model().default_thresholds)
        out.update({str(k): v for k, v in self.config.thresholds.items()})
        if stage is Stage.CONTEXT:
            out.update({str(k): v for k, v in self.config.context_thresholds.items()})
        return out

    def score_sync(self, text: str) -> Scores:
        extra = {"library": True} if self.config.library else {}  # the shipped classifier's option only
        return self._model().score(
            text, max_windows=self.config.max_windows, model_windows=self.config.model_windows, **extra
        )

    async def run(self, text: str, ctx: CheckContext) -> CheckResult:
        scores = await asyncio.to_thread(self.score_sync, text)
        return self.result(scores, ctx.stage)

    def result(self, scores: Scores, stage: Stage) -> CheckResult:
        """The shipped model's calibrated document-level decision (decision.py) unless per-class thresholds
        are configured or the model has none; then one finding per class over its threshold."""
        decided = check_result(self.name, scores, getattr(self._model(), "meta", {}), self.config)
        if decided is not None:
            return decided
        thresholds = self.thresholds(stage)
        findings = []
        for cls in CLASSES:
            p = scores.probs.get(cls, 0.0)
            if p < thresholds[cls]:
                continue
            action = _ACTIONS[self.config.actions.get(cls, "block")]
            if action is Action.ALLOW:
                continue
            start, end = scores.spans[cls]
            findings.append(
                Finding(
                    check=self.name,
                    type=cls,
                    start=start,
                    end=end,
                    score=round(p, 4),
                    action=action,
                    detail={
                        "threshold": round(thresholds[cls], 4),
                        "windows": scores.windows,
                        "windows_read": scores.read,
                    },
                )
            )
        top = max((scores.probs.get(c, 0.0) for c in CLASSES), default=0.0)
        return CheckResult(
            check=self.name,
            action=Action.strongest([f.action for f in findings]),
            findings=findings,
            score=round(top, 4),
        )
