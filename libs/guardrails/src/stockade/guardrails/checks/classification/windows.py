"""How a text of any length is cut into the model's windows, and which windows the model sees.

A text is tokenised once. Its tokens are cut into windows of ``body`` tokens (the model's window less its
``[CLS]`` and ``[SEP]``) that start every ``stride`` tokens, the last one aligned to the text's end, so every
token is in at least one window and an attack cut by a border is whole in the next window when the overlap
(``body - stride``) is at least its length.

When a text has more windows than the model may run per call (``max_model_windows``), a cheap screener scores
every window and the model runs on the highest-scoring ones plus the first and the last. Training and
evaluation use the same functions, so what is measured is what runs.
"""

from __future__ import annotations

from collections.abc import Sequence


def window_starts(n_tokens: int, body: int, stride: int) -> list[int]:
    """Start offsets of the windows over ``n_tokens`` tokens (at least one window, even for no tokens)."""
    if body <= 0 or not 0 < stride <= body:
        raise ValueError(f"need 0 < stride <= body, got body={body} stride={stride}")
    if n_tokens <= body:
        return [0]
    starts = list(range(0, n_tokens - body, stride))
    starts.append(n_tokens - body)
    return starts


def pick_windows(screen_scores: Sequence[float], budget: int) -> list[int]:
    """Indices of the windows the model runs on: all of them within ``budget``; else the first, the last and
    the ``budget - 2`` best by screener score, in text order."""
    n = len(screen_scores)
    if n <= budget:
        return list(range(n))
    chosen = {0, n - 1}
    ranked = sorted(range(1, n - 1), key=lambda i: (-screen_scores[i], i))
    chosen.update(ranked[: max(0, budget - 2)])
    return sorted(chosen)
