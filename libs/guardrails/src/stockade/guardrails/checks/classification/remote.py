"""A classifier hosted as a service (``classification.remote``): one GPU model for all of a team's agents.

The wire protocol is the toxicity service's (services/toxicity-classifier, and the toxicity check's client):
``POST <url>`` with ``{"inputs": ["window", ...]}`` (and ``Authorization: Bearer <key>`` when ``api_key_env``
names a set variable); the reply is one ``[{"label": str, "score": float}, ...]`` list per input, in order.
A text is cut into windows of ``window_chars`` characters (``overlap_chars`` shared) sent in batches of
``max_batch``; labels map to classes as for ``model_path`` and the same window rule applies.

Timeouts, network errors, 429 and 5xx are retried with exponential backoff; after ``breaker_failures``
consecutive failures the circuit opens for ``breaker_reset_s``. A failure raises
:class:`~stockade.guardrails.errors.CheckUnavailableError`, which the runner turns into a block (fail-closed,
the default) or a warning. The calls are synchronous: the check runs ``score`` in a worker thread.
"""

from __future__ import annotations

import os
import time
from typing import Any

import httpx
from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from stockade.guardrails.checks.classification.backend_config import RemoteClassifierConfig
from stockade.guardrails.checks.classification.backends import (
    CLASS_ORDER,
    DEFAULT_THRESHOLD,
    best_over_windows,
    class_matrix,
    label_classes,
)
from stockade.guardrails.checks.classification.model import Scores, TextTooLongError
from stockade.guardrails.checks.toxicity.breaker import CircuitBreaker
from stockade.guardrails.errors import CheckUnavailableError

WHERE = "guardrails.checks.classification.remote.label_map"
_RETRY_STATUS = {429, 500, 502, 503, 504}


class _LabelScore(BaseModel):
    label: str
    score: float = Field(ge=0, le=1)


_REPLY = TypeAdapter(list[list[_LabelScore]])


def char_windows(text: str, size: int, overlap: int) -> list[tuple[int, int]]:
    """Spans of ``size`` characters every ``size - overlap``, the last one aligned to the end (one for a short
    or empty text)."""
    return [(s, min(len(text), s + size)) for s in window_starts_chars(len(text), size, size - overlap)]


def window_starts_chars(n: int, size: int, stride: int) -> list[int]:
    if n <= size:
        return [0]
    starts = list(range(0, n - size, stride))
    starts.append(n - size)
    return starts


class RemoteClassifier:
    def __init__(
        self, config: RemoteClassifierConfig, *, transport: httpx.BaseTransport | None = None
    ) -> None:
        self.config = config
        self.breaker = CircuitBreaker(config.breaker_failures, config.breaker_reset_s)
        headers = {}
        if config.api_key_env:
            key = os.environ.get(config.api_key_env, "").strip()
            if not key:
                raise CheckUnavailableError(
                    f"guardrails.checks.classification.remote.api_key_env: {config.api_key_env} is not set"
                )
            headers["Authorization"] = f"Bearer {key}"
        self._client = httpx.Client(timeout=config.timeout_s, headers=headers, transport=transport)
        self._classes: dict[tuple[str, ...], list[str]] = {}

    @property
    def default_thresholds(self) -> dict[str, float]:
        return {c: DEFAULT_THRESHOLD for c in CLASS_ORDER if c != "benign"}

    def close(self) -> None:
        self._client.close()

    def score(self, text: str, *, max_windows: int, model_windows: int | None = None) -> Scores:
        import numpy as np

        cfg = self.config
        spans = char_windows(text, cfg.window_chars, cfg.overlap_chars)
        if len(spans) > max_windows:
            raise TextTooLongError(
                f"text of {len(text)} characters needs {len(spans)} windows of {cfg.window_chars}, over the "
                f"limit of {max_windows} (guardrails.checks.classification.max_windows)"
            )
        rows = []
        for i in range(0, len(spans), cfg.max_batch):
            batch = [text[a:b] for a, b in spans[i : i + cfg.max_batch]]
            for labels in self.classify(batch):
                names = tuple(label for label, _ in labels)
                classes = self._classes.get(names)
                if classes is None:
                    classes = self._classes.setdefault(names, label_classes(names, cfg.label_map, {}, WHERE))
                probs = np.asarray([[score for _, score in labels]], dtype=np.float64)
                rows.append(class_matrix(probs, classes)[0])
        return best_over_windows(np.asarray(rows), spans, len(spans))

    def classify(self, texts: list[str]) -> list[list[tuple[str, float]]]:
        """The service's labels and scores per text (retries, circuit breaker)."""
        if not self.breaker.allow():
            raise CheckUnavailableError(f"classifier service circuit is open ({self.config.url})")
        try:
            out = self._with_retries(texts)
        except Exception:
            self.breaker.failure()
            raise
        self.breaker.success()
        return out

    def _with_retries(self, texts: list[str]) -> list[list[tuple[str, float]]]:
        cfg = self.config
        last: str = ""
        for attempt in range(cfg.retries + 1):
            if attempt:
                time.sleep(cfg.backoff_s * 2 ** (attempt - 1))
            try:
                resp = self._client.post(cfg.url, json={"inputs": texts})
            except httpx.TransportError as exc:  # timeouts, refused connections, resets
                last = f"{type(exc).__name__}: {exc}"
                continue
            if resp.status_code in _RETRY_STATUS:
                last = f"HTTP {resp.status_code}"
                continue
            if resp.status_code >= 400:
                raise CheckUnavailableError(f"classifier service returned {resp.status_code}")
            return _parse(resp, len(texts))
        raise CheckUnavailableError(f"classifier service failed after {cfg.retries + 1} attempts: {last}")


def _parse(resp: httpx.Response, expected: int) -> list[list[tuple[str, float]]]:
    try:
        body: Any = resp.json()
        replies = _REPLY.validate_python(body)
    except (ValueError, ValidationError):
        raise CheckUnavailableError(
            "classifier service reply is not one list of {label, score} per text"
        ) from None
    if len(replies) != expected or any(not r for r in replies):
        raise CheckUnavailableError(f"classifier service answered {len(replies)} texts of {expected}")
    return [[(item.label, item.score) for item in reply] for reply in replies]
