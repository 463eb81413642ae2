"""Server-side diffs of prompt versions and SKILL.md files, as rows a template escapes; bounded in time and
size, and run off the event loop (:func:`diff_off_loop`).

A prompt's content is text or a list of chat messages; both become text (a message as ``[role]`` then its
content) followed by the config as sorted, indented JSON, so a changed temperature shows up too.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from diff_match_patch import diff_match_patch

CONTEXT_LINES = 3
DEADLINE_S = 2.0
"""Seconds the line diff searches for the smallest edit before it settles for a coarser one."""
MAX_DIFF_CHARS = 1_000_000
"""Two versions longer than this together are not compared on the page."""


@dataclass(frozen=True, slots=True)
class DiffLine:
    kind: str  # "same", "added", "removed", "gap"
    old: int | None
    new: int | None
    text: str


def prompt_text(content: Any, config: Any) -> str:
    if isinstance(content, list):
        parts = [f"[{m.get('role', '?')}]\n{m.get('content', '')}" for m in content if isinstance(m, dict)]
        body = "\n\n".join(parts)
    else:
        body = str(content)
    if config:
        body += "\n\n--- config ---\n" + json.dumps(config, indent=2, sort_keys=True, ensure_ascii=False)
    return body


def _edits(a: list[str], b: list[str]) -> list[tuple[str, int, int]]:
    """Line edits as ``(kind, index in a, index in b)``, kind "same", "removed" or "added", in order.

    diff-match-patch's line mode (each distinct line one character) with its deadline: at most
    :data:`DEADLINE_S` in the search, then the rest is one removal and one addition, so the time is bounded
    whatever the input (difflib's SequenceMatcher is cubic on repeated lines)."""
    dmp = diff_match_patch()
    dmp.Diff_Timeout = DEADLINE_S
    chars_a, chars_b, _ = dmp.diff_linesToChars("".join(a), "".join(b))
    diffs = dmp.diff_main(chars_a, chars_b, False)
    kinds = {dmp.DIFF_EQUAL: "same", dmp.DIFF_DELETE: "removed", dmp.DIFF_INSERT: "added"}
    out: list[tuple[str, int, int]] = []
    i = j = 0
    for op, chars in diffs:
        kind = kinds[op]
        for _ in chars:  # one character per line
            out.append((kind, i, j))
            i += kind != "added"
            j += kind != "removed"
    return out


def _near_a_change(edits: list[tuple[str, int, int]], context: int) -> list[bool]:
    """Per edit: is it a change, or within ``context`` edits of one (two linear passes)."""
    far = len(edits) + context + 1
    before, after = [far] * len(edits), [far] * len(edits)
    last = -far
    for n, (kind, _, _) in enumerate(edits):
        last = n if kind != "same" else last
        before[n] = n - last
    last = 2 * far
    for n in range(len(edits) - 1, -1, -1):
        last = n if edits[n][0] != "same" else last
        after[n] = last - n
    return [min(b, a) <= context for b, a in zip(before, after, strict=True)]


def diff_lines(old: str, new: str, context: int = CONTEXT_LINES) -> list[DiffLine]:
    """Changed lines with ``context`` unchanged lines around them; a "gap" row where unchanged lines were left
    out. Empty when the texts are equal. Texts over :data:`MAX_DIFF_CHARS` together are not compared: one
    "gap" row says so. Bounded in time (:func:`_edits`); call it through :func:`diff_off_loop` from a request."""
    if old == new:
        return []
    if len(old) + len(new) > MAX_DIFF_CHARS:
        return [
            DiffLine("gap", None, None, f"too large to compare here (over {MAX_DIFF_CHARS:,} characters)")
        ]
    a, b = old.splitlines(), new.splitlines()
    edits = _edits([line + "\n" for line in a], [line + "\n" for line in b])
    shown = _near_a_change(edits, context)
    rows: list[DiffLine] = []
    for n, (kind, i, j) in enumerate(edits):
        if not shown[n]:
            continue
        if rows and not shown[n - 1]:
            rows.append(DiffLine("gap", None, None, "…"))
        if kind == "same":
            rows.append(DiffLine("same", i + 1, j + 1, a[i]))
        elif kind == "removed":
            rows.append(DiffLine("removed", i + 1, None, a[i]))
        else:
            rows.append(DiffLine("added", None, j + 1, b[j]))
    return rows


async def diff_off_loop(old: str, new: str) -> list[DiffLine]:
    """:func:`diff_lines` on a worker thread, so the console keeps answering other requests meanwhile."""
    return await asyncio.to_thread(diff_lines, old, new)
