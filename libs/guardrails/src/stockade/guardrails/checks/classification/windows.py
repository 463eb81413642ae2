"""How a text of any length is cut into the model's windows, and which windows the model sees.

A text is tokenised once. Its tokens are cut into windows of ``body`` tokens (the model's window less its
``[CLS]`` and ``[SEP]``) that start every ``stride`` tokens, the last one aligned to the text's end, so every
token is in at least one window and an attack cut by a border is whole in the next window when the overlap
(``body - stride``) is at least its length.

When a text has more windows than the model may run per call (``max_model_windows``), a cheap screener scores
every window and the model runs on the highest-scoring ones plus the first and the last. Training and
evaluation use the same functions, so what is measured is what runs.

A window's score is the mean of its tokens, so a short instruction set between paragraphs of prose is diluted by
the prose in its window. Short texts are therefore also read sentence by sentence (``sentence_spans`` for a
text of one window, ``sentence_ranges`` for the most suspicious window of a text of a few windows).
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


MAX_SENTENCES = 6
_ENDS = frozenset({".", "!", "?"})
_RANGE_ENDS = frozenset({".", "!", "?", ";"})
MIN_SENTENCE_TOKENS = 4


def sentence_spans(tokens: Sequence[str]) -> list[tuple[int, int]]:
    """Token ranges of the sentences of a short text, when it has 2 to ``MAX_SENTENCES`` of them (else none).

    A window's score is not monotone in its content: an injection followed by a role-play sentence could score
    below the injection alone. Reading each sentence alone as well makes the text's score at least its
    strongest sentence's, so adding attack sentences never lowers it."""
    out, start = [], 0
    for i, token in enumerate(tokens):
        ends = token in _ENDS and i + 1 < len(tokens) and tokens[i + 1] not in _ENDS
        if ends and i + 1 - start >= 3:
            out.append((start, i + 1))
            start = i + 1
    if start < len(tokens) and len(tokens) - start >= 3:
        out.append((start, len(tokens)))
    return out if 2 <= len(out) <= MAX_SENTENCES else []


def sentence_ranges(
    text: str, tokens: Sequence[str], offsets: Sequence[tuple[int, int]], body: int, stride: int
) -> list[tuple[int, int]]:
    """Token ranges of the sentences of ``text`` (tokenised as ``tokens`` at character ``offsets``), in text
    order: cut after ``. ! ? ;`` and at line breaks, each at least ``MIN_SENTENCE_TOKENS`` tokens (a shorter one
    joins the next), one longer than ``body`` cut as windows are."""
    cuts, start = [], 0
    for i in range(1, len(tokens)):
        gap = text[offsets[i - 1][1] : offsets[i][0]]
        end = tokens[i - 1] in _RANGE_ENDS and tokens[i] not in _RANGE_ENDS
        if (end or "\n" in gap) and i - start >= MIN_SENTENCE_TOKENS:
            cuts.append((start, i))
            start = i
    if start < len(tokens):
        cuts.append((start, len(tokens)))
    out = []
    for a, b in cuts:
        if b - a <= body:
            out.append((a, b))
        else:
            out.extend((a + s, a + s + body) for s in window_starts(b - a, body, stride))
    return out


def char_span(offsets: list[tuple[int, int]], start: int, length: int) -> tuple[int, int]:
    """The characters of ``length`` tokens from token ``start`` (``offsets``: each token's characters)."""
    if not offsets or length == 0:
        return (0, 0)
    return (offsets[start][0], offsets[start + length - 1][1])
