"""The toxicity check: classes toxic / offensive / non-toxic from a remote classifier, with a threshold."""

from __future__ import annotations

from stockade.guardrails.checks.base import CheckContext
from stockade.guardrails.checks.config import ContentChecksConfig, ToxicityClass, ToxicityConfig
from stockade.guardrails.checks.toxicity.client import ClassificationClient, MalformedResponseError
from stockade.guardrails.verdict import Action, CheckResult, Finding


class ToxicityCheck:
    name = "toxicity"

    def __init__(self, config: ToxicityConfig, *, client: ClassificationClient | None = None) -> None:
        self.config = config
        self.stages = frozenset(config.stages)
        self.client = client if client is not None else ClassificationClient(config)
        self._label_map = {k.lower(): v for k, v in config.label_map.items()}

    async def aclose(self) -> None:
        await self.client.aclose()

    async def run(self, text: str, ctx: CheckContext) -> CheckResult:
        labels = await self.client.classify(text)
        per_class: dict[ToxicityClass, float] = {}
        for label, score in labels:
            cls = self._label_map.get(label.lower())
            if cls is not None:
                per_class[cls] = max(per_class.get(cls, 0.0), score)
        if (
            not per_class
        ):  # another model, a mis-set label_map: no verdict at all, so never "allow" (fail closed)
            raise MalformedResponseError(
                f"toxicity service reply has no label of label_map ({', '.join(sorted({lb for lb, _ in labels}))}); "
                "map the model's labels in checks.toxicity.label_map"
            )
        findings = []
        actions = {
            ToxicityClass.TOXIC: self.config.toxic_action,
            ToxicityClass.OFFENSIVE: self.config.offensive_action,
        }
        for cls, action in actions.items():
            score = per_class.get(cls, 0.0)
            if score >= self.config.threshold and action != "allow":
                findings.append(
                    Finding(check=self.name, type=cls.value, score=round(score, 4), action=Action(action))
                )
        risk = max(per_class.get(ToxicityClass.TOXIC, 0.0), per_class.get(ToxicityClass.OFFENSIVE, 0.0))
        return CheckResult(
            check=self.name,
            action=Action.strongest([f.action for f in findings]),
            findings=findings,
            score=round(risk, 4),
        )


def build(config: ContentChecksConfig) -> ToxicityCheck:
    return ToxicityCheck(config.toxicity)
