"""Run page filters, cursors, CSV cells and the SVG charts: plain functions, no store."""

import base64
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qsl

import pytest

from stockade.model_api.console.runs.charts import decision_bars, horizontal_bars
from stockade.model_api.console.runs.filters import Cursor, FilterError, decode_cursor, parse_filters
from stockade.model_api.console.runs.pages import _cell

NOW = datetime(2026, 11, 24, 12, 30, tzinfo=UTC)


def test_defaults_are_the_last_seven_days_and_form_times_read_as_utc():
    f = parse_filters({}, NOW)
    assert f.until - f.since == timedelta(days=7) and f.until > NOW
    f = parse_filters({"from": "2026-11-01T08:00", "to": "2026-11-02", "outcome": "BLOCK"}, NOW)
    assert f.since == datetime(2026, 11, 1, 8, tzinfo=UTC) and f.until == datetime(2026, 11, 2, tzinfo=UTC)
    assert f.outcome == "block"
    offset = parse_filters({"from": "2026-11-01T08:00:00+02:00", "to": "2026-11-01T09:00Z"}, NOW)
    assert offset.since == datetime(2026, 11, 1, 6, tzinfo=UTC)


def test_every_problem_is_reported_at_once():
    with pytest.raises(FilterError) as caught:
        parse_filters({"outcome": "x", "action": "y", "from": "soon", "project": "a\nb"}, NOW)
    assert [field for field, _ in caught.value.problems] == ["project", "outcome", "action", "from"]


def test_filters_round_trip_through_their_query_string():
    f = parse_filters(
        {"project": "shop & co", "check": "pii", "from": "2026-11-01T00:00", "to": "2026-11-03T00:00"}
    )
    again = parse_filters(dict(parse_qsl(f.query())))
    assert (again.project, again.check, again.since, again.until) == (f.project, f.check, f.since, f.until)


def test_cursor_round_trip_and_forgeries():
    c = Cursor(last_at=datetime(2026, 11, 24, 1, 2, 3, 456789, tzinfo=UTC), project_id="shop", run_id="run/1")
    assert decode_cursor(c.encode()) == c and decode_cursor("") is None
    naive = base64.urlsafe_b64encode(b'["2026-01-01T00:00:00","p","r"]').decode().rstrip("=")
    for bad in ("!!", "e30", "WzEsMiwzXQ", naive):
        with pytest.raises(FilterError):
            decode_cursor(bad)


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        ("=HYPERLINK(1)", "'=HYPERLINK(1)"),
        ("@SUM", "'@SUM"),
        ("-1.5", "-1.5"),
        ("+x", "'+x"),
        (None, ""),
        ({"B": 1, "A": 2}, '{"A": 2, "B": 1}'),
        ("plain", "plain"),
    ],
)
def test_csv_cells_never_start_a_formula(value, cell):
    assert _cell(value) == cell


def test_charts_escape_labels_and_carry_titles():
    svg = str(horizontal_bars([("<script>", 3.0)], "Top & co"))
    assert "<script>" not in svg and "&lt;script&gt;" in svg and 'aria-label="Top &amp; co"' in svg
    start = datetime(2026, 11, 24, tzinfo=UTC)
    bars = str(decision_bars([start, start + timedelta(hours=1)], {start: (2, 3)}, "pii"))
    assert bars.count('class="block"') == 1 and bars.count('class="mask"') == 1 and "style=" not in bars
