"""The values of guardrail.cmd.read_runs.v1 survive JSON: datetimes, dates and tuples are tagged, the rest as is."""

import json
from datetime import UTC, date, datetime

import pytest
from pydantic import ValidationError

from stockade.contracts import RunStoreRead, RunStoreRows
from stockade.contracts.run_reads import decode_row, decode_value, encode_value


def test_values_round_trip_through_json():
    parameters = {
        "since": "2026-11-24 10:00:00.000000",
        "limit": 26,
        "only": [("proj", "run-1"), ("proj", "run-2")],
        "at": datetime(2026, 11, 24, 10, 0, 1, 250, tzinfo=UTC),
        "naive": datetime(2026, 11, 24, 10, 0, 1),
        "day": date(2026, 11, 24),
        "nested": {"a": [1.5, None, True]},
    }
    again = decode_value(json.loads(json.dumps(encode_value(parameters))))
    assert again == parameters
    assert isinstance(again["only"][0], tuple) and again["naive"].tzinfo is None


def test_a_row_comes_back_as_the_tuple_clickhouse_connect_gives():
    row = ("p", datetime(2026, 1, 1, tzinfo=UTC), ["pii", "toxicity"], (["EMAIL"], [2]), float("nan"))
    wire = json.loads(json.dumps([encode_value(v) for v in row]))
    back = decode_row(wire)
    assert back[:4] == row[:4] and back[4] != back[4]  # NaN (an empty quantile) stays NaN


def test_request_and_reply_are_validated():
    assert RunStoreRead(read_id="abc", sql="SELECT 1").part == 0
    with pytest.raises(ValidationError):
        RunStoreRead(read_id="a b", sql="SELECT 1")  # read ids are plain tokens
    with pytest.raises(ValidationError):
        RunStoreRows(read_id="abc", part=0, parts=0, rows=[])
