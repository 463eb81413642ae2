"""Server-side diffs of prompt versions and SKILL.md files (difflib), as rows a template escapes.

A prompt's content is text or a list of chat messages; both become text (a message as ``[role]`` then its
content) followed by the config as sorted, indented JSON, so a changed temperature shows up too.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Any

CONTEXT_LINES = 3


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


def diff_lines(old: str, new: str, context: int = CONTEXT_LINES) -> list[DiffLine]:
    """Changed lines with ``context`` unchanged lines around them; a "gap" row where unchanged lines were left
    out. Empty when the texts are equal."""
    a, b = old.splitlines(), new.splitlines()
    rows: list[DiffLine] = []
    for group in difflib.SequenceMatcher(None, a, b, autojunk=False).get_grouped_opcodes(context):
        if rows:
            rows.append(DiffLine("gap", None, None, "…"))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                rows.extend(DiffLine("same", i + 1, j1 + k + 1, a[i]) for k, i in enumerate(range(i1, i2)))
                continue
            rows.extend(DiffLine("removed", i + 1, None, a[i]) for i in range(i1, i2))
            rows.extend(DiffLine("added", None, j + 1, b[j]) for j in range(j1, j2))
    return rows
