"""stockade.runtime.storable: which text PostgreSQL (and UTF-8) can hold, and where a JSON body breaks that."""

import json

import pytest
from pydantic import TypeAdapter, ValidationError

from stockade.runtime.storable import StorableStr, check_storable, is_storable, unstorable_at


@pytest.mark.parametrize("value", ["", "plain", "é ü 中文 🙂", "tab\tnew\nline", "\x7f", "\ufffd"])
def test_ordinary_text_is_storable(value):
    assert is_storable(value) and check_storable(value) == value


@pytest.mark.parametrize("value", ["\x00", "id\x00", "\ud800", "x\udfff", "\udbff\udc00"])
def test_nul_and_lone_surrogates_are_not(value):
    assert not is_storable(value)
    with pytest.raises(ValueError, match="NUL"):
        check_storable(value)
    with pytest.raises(ValidationError):
        TypeAdapter(StorableStr).validate_python(value)


def test_the_location_of_the_first_unencodable_string_in_a_json_value():
    assert unstorable_at({"a": [1, "ok", {"b": "x\ud800"}]}) == "a.2.b"
    assert unstorable_at("\udc00") == ""
    assert unstorable_at({"k\ud800": 1}) == ""
    assert unstorable_at({"outer": {"k\ud800": 1}}) == "outer"
    assert (
        unstorable_at({"a": "x\x00", "b\x00": None, "c": [True, 1.5, None]}) is None
    )  # NUL: JSON escapes it
    assert unstorable_at({"outer": {"b\x00": 1}}, nul_in_keys=True) == "outer"
    assert unstorable_at(json.loads('{"fine": "\\u00e9"}')) is None


def test_the_walk_reaches_as_deep_as_the_json_parser_without_recursion():
    depth = 5_000  # past the interpreter's recursion limit (1,000)
    value: object = "\ud800"
    for _ in range(depth):
        value = [value]
    assert unstorable_at(value) == ".".join(["0"] * depth)
