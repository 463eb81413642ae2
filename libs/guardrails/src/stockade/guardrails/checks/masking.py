"""Apply the masking findings of several checks to one text."""

from __future__ import annotations

from stockade.guardrails.verdict import Action, Finding


def default_replacement(finding: Finding) -> str:
    return f"<{finding.type}>"


def apply_masks(text: str, findings: list[Finding]) -> str:
    """Replace every MASK finding's span with its ``detail['replacement']`` (default ``<TYPE>``).

    Overlapping spans are merged; the merged span takes the replacement of its longest member.
    """
    spans = sorted(
        (f for f in findings if f.action is Action.MASK and f.start is not None and f.end is not None),
        key=lambda f: (f.start or 0, -(f.end or 0)),
    )
    merged: list[tuple[int, int, str, int]] = []  # start, end, replacement, length of the chosen member
    for f in spans:
        start, end = f.start or 0, f.end or 0
        repl = str(f.detail.get("replacement", default_replacement(f)))
        if merged and start < merged[-1][1]:
            m_start, m_end, m_repl, m_len = merged[-1]
            best = (repl, end - start) if end - start > m_len else (m_repl, m_len)
            merged[-1] = (m_start, max(m_end, end), best[0], best[1])
        else:
            merged.append((start, end, repl, end - start))
    out, pos = [], 0
    for start, end, repl, _ in merged:
        out.append(text[pos:start])
        out.append(repl)
        pos = end
    out.append(text[pos:])
    return "".join(out)
