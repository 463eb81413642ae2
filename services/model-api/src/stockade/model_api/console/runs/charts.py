"""Server-side SVG charts for the runs overview: no script, no CDN, nothing inline the CSP would refuse.

Colours are presentation attributes and classes (console.css), never ``style=``. Every chart carries a
``<title>`` and ``role="img"`` with a label; the page shows the same numbers in a table next to it.
"""

from __future__ import annotations

from datetime import datetime

from markupsafe import Markup, escape

WIDTH = 560


def decision_bars(buckets: list[datetime], series: dict[datetime, tuple[int, int]], title: str) -> Markup:
    """Blocks (bottom) and masks (stacked on top) per time bucket."""
    height, left, bottom, top = 140, 36, 22, 8
    peak = max((b + m for b, m in series.values()), default=0) or 1
    n = max(len(buckets), 1)
    step = (WIDTH - left - 4) / n
    bar = max(step * 0.8, 1.0)
    scale = (height - bottom - top) / peak
    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" role="img" '
        f'aria-label="{escape(title)}"><title>{escape(title)}</title>',
        f'<line class="axis" x1="{left}" y1="{height - bottom}" x2="{WIDTH}" y2="{height - bottom}"/>',
        f'<text class="tick" x="{left - 4}" y="{top + 8}" text-anchor="end">{peak}</text>',
        f'<text class="tick" x="{left - 4}" y="{height - bottom}" text-anchor="end">0</text>',
    ]
    for i, start in enumerate(buckets):
        blocks, masks = series.get(start, (0, 0))
        x = left + i * step
        base: float = height - bottom
        label = f"{start:%Y-%m-%d %H:%M}: {blocks} blocked, {masks} masked"
        if blocks:
            h = blocks * scale
            parts.append(
                f'<rect class="block" x="{x:.1f}" y="{base - h:.1f}" width="{bar:.1f}" height="{h:.1f}">'
                f"<title>{escape(label)}</title></rect>"
            )
            base -= h
        if masks:
            h = masks * scale
            parts.append(
                f'<rect class="mask" x="{x:.1f}" y="{base - h:.1f}" width="{bar:.1f}" height="{h:.1f}">'
                f"<title>{escape(label)}</title></rect>"
            )
    if buckets:
        for i in (0, len(buckets) - 1):
            anchor = "start" if i == 0 else "end"
            x = left + i * step + (bar if i else 0)
            parts.append(
                f'<text class="tick" x="{x:.1f}" y="{height - 6}" text-anchor="{anchor}">'
                f"{buckets[i]:%m-%d %H:%M}</text>"
            )
    parts.append("</svg>")
    return Markup("".join(parts))  # noqa: S704 - every text part above is escaped


def horizontal_bars(rows: list[tuple[str, float]], title: str, unit: str = "") -> Markup:
    """One labelled bar per row (top finding types, trust rejections by reason, latency p95)."""
    line, label_w = 22, 200
    height = max(len(rows), 1) * line + 8
    peak = max((v for _, v in rows), default=0) or 1
    usable = WIDTH - label_w - 70
    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" role="img" '
        f'aria-label="{escape(title)}"><title>{escape(title)}</title>'
    ]
    for i, (label, value) in enumerate(rows):
        y = 4 + i * line
        w = max(value / peak * usable, 1.0)
        short = label if len(label) <= 30 else label[:29] + "…"
        shown = f"{value:,.1f}" if isinstance(value, float) and not value.is_integer() else f"{value:,.0f}"
        parts.append(
            f'<text class="label" x="{label_w - 6}" y="{y + 15}" text-anchor="end">{escape(short)}</text>'
            f'<rect class="bar" x="{label_w}" y="{y + 3}" width="{w:.1f}" height="{line - 8}">'
            f"<title>{escape(label)}: {shown}{escape(unit)}</title></rect>"
            f'<text class="value" x="{label_w + w + 6:.1f}" y="{y + 15}">{shown}{escape(unit)}</text>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))  # noqa: S704 - every text part above is escaped
