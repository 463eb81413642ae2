"""Large-text processing (spec 9.2): split a text into overlapping token windows, and merge the entities
found in each window back into one list in original character offsets. No input-length limit."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Entity:
    start: int
    end: int
    label: str
    score: float


def token_windows(
    offsets: list[tuple[int, int]], chunk_tokens: int, overlap_tokens: int
) -> list[tuple[int, int]]:
    """Character ranges of windows of ``chunk_tokens`` tokens, neighbours sharing ``overlap_tokens`` tokens."""
    if not offsets:
        return []
    if overlap_tokens >= chunk_tokens:
        raise ValueError("overlap_tokens must be smaller than chunk_tokens")
    step = chunk_tokens - overlap_tokens
    windows = []
    start = 0
    while True:
        end = min(start + chunk_tokens, len(offsets))
        windows.append((offsets[start][0], offsets[end - 1][1]))
        if end == len(offsets):
            return windows
        start += step


def merge_entities(text: str, entities: list[Entity]) -> list[Entity]:
    """Merge duplicates from overlapping windows and pieces of one entity cut by a window border:
    same label and overlapping, touching, or separated only by whitespace."""
    merged: list[Entity] = []
    for e in sorted(entities, key=lambda e: (e.label, e.start, e.end)):
        last = merged[-1] if merged else None
        if last is not None and last.label == e.label and _joinable(text, last, e):
            merged[-1] = Entity(last.start, max(last.end, e.end), e.label, max(last.score, e.score))
        else:
            merged.append(e)
    return sorted(merged, key=lambda e: (e.start, e.end))


def _joinable(text: str, a: Entity, b: Entity) -> bool:
    if b.start <= a.end:
        return True
    gap = text[a.end : b.start]
    return len(gap) <= 1 and gap.isspace()
