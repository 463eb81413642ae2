"""Two-stage routing: a cheap static-embedding stage decides the clear cases, the full encoder the rest.

The prefilter scores a text against the same routes and benign references as the full router, with vectors from
a :class:`~stockade.guardrails.checks.classification.static_encoder.StaticEncoder`. Each route has a band
``[low, high)`` fitted on the training data (leave-one-out scores):

- ``low``: at most ``max_miss`` of the route's training examples score below it (for routes without labelled
  examples, its own utterances stand in);
- ``high``: at most ``max_fpr`` of the benign training texts score at or above it (never reached, ``inf``,
  for routes without labelled examples).

A text whose every route scores below ``low`` passes and one whose routes all lie outside their bands is decided
by the prefilter; a text with any route inside its band goes to the full encoder, which decides every route.
"""

from __future__ import annotations

from dataclasses import dataclass

from stockade.guardrails.checks.classification.encoders import Encoder, encode_all
from stockade.guardrails.checks.classification.semantic_router import (
    PrefilterBands,
    Route,
    RouterModel,
    Scorer,
)


@dataclass(frozen=True)
class Decision:
    """The prefilter's verdict on a text: the routes that fire (empty: passes) and every route's score."""

    fired: list[str]
    scores: dict[str, float]


class Prefilter:
    """Static-stage scorer over a router model's utterances and benign references."""

    def __init__(self, encoder: Encoder, bands: PrefilterBands, scorer: Scorer) -> None:
        self.encoder, self.bands, self.scorer = encoder, bands, scorer

    @classmethod
    async def build(cls, encoder: Encoder, bands: PrefilterBands, model: RouterModel) -> Prefilter:
        static = RouterModel(
            routes=[
                Route(r.name, r.utterances, r.threshold, r.action, await encode_all(encoder, r.utterances))
                for r in model.routes
            ],
            benign=model.benign,
            benign_embeddings=await encode_all(encoder, model.benign) if model.benign else [],
            top_k=model.top_k,
            encoder=bands.encoder,
        )
        return cls(encoder, bands, Scorer(static))

    def decide(self, vector: list[float]) -> Decision | None:
        """A decision when every route lies outside its band, else None (the full encoder must decide)."""
        scores = self.scorer.scores(vector)
        fired = []
        for name, score in scores.items():
            band = self.bands.bands.get(name)
            if band is None:
                return None
            if score >= band.high:
                fired.append(name)
            elif score >= band.low:
                return None
        return Decision(fired, scores)
