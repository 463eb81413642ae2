"""The model record body (spec 2): required fields, documented value lists, exact decimal prices."""

import json
from decimal import Decimal

import pytest
from pydantic import ValidationError

from stockade.model_api.catalogue.prices import from_micros, parse_price, price_json, to_micros
from stockade.model_api.catalogue.schemas import ModelUpsert
from stockade.model_api.catalogue.vocabulary import Capability, ModelType


def body(**model):
    base = {"model_id": "gpt-4o", "displayName": "GPT-4o", "modelType": "chat"}
    return {"provider": "openai", "model": {**base, **model}}


def problems(data) -> dict[str, str]:
    with pytest.raises(ValidationError) as info:
        ModelUpsert.model_validate(data)
    return {".".join(map(str, e["loc"])): e["msg"] for e in info.value.errors()}


def test_minimal_record_gets_defaults_and_folded_provider():
    parsed = ModelUpsert.model_validate({**body(), "provider": " OpenAI "})
    assert parsed.provider == "openai"
    assert parsed.model.id is None and parsed.model.capabilities == []
    assert parsed.model.input_price is None and parsed.model.context_window is None


@pytest.mark.parametrize("field", ["model_id", "displayName", "modelType"])
def test_required_fields(field):
    data = body()
    del data["model"][field]
    assert problems(data) == {f"model.{field}": "Field required"}


def test_missing_provider_and_model():
    assert set(problems({})) == {"provider", "model"}


def test_unknown_model_type_lists_the_allowed_values():
    msg = problems(body(modelType="llm"))["model.modelType"]
    assert all(t.value in msg for t in ModelType)


def test_capabilities_from_the_documented_list_distinct_and_sorted():
    assert "model.capabilities.1" in problems(body(capabilities=["text", "telepathy"]))
    assert "model.capabilities" in problems(body(capabilities=["text", "text"]))
    parsed = ModelUpsert.model_validate(body(capabilities=["vision", "tools", "text"]))
    assert [c.value for c in parsed.model.capabilities] == ["text", "tools", "vision"]
    assert len(Capability) == 14


def test_typo_in_a_field_name_is_rejected_not_dropped():
    assert problems(body(contextwindow=8000)) == {"model.contextwindow": "Extra inputs are not permitted"}


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (-1, "negative"),
        (True, "must be a number"),
        ("abc", "not a decimal"),
        ("NaN", "finite"),
        (1_000_000.5, "at most 1000000"),
        ("0.0000001", "6 decimal places"),
        ([1], "must be a number"),
        ("1_000", "not a decimal"),
        ("-0", "negative"),
        (float("inf"), "finite"),
    ],
)
def test_bad_prices(value, fragment):
    assert fragment in problems(body(inputPricePerMToken=value))["model.inputPricePerMToken"]


@pytest.mark.parametrize("value", [True, 1.5, "8000", 0, 100_000_001])
def test_bad_context_window(value):
    assert "model.contextWindow" in problems(body(contextWindow=value))


@pytest.mark.parametrize("model_id", ["", " padded", "tab\there", "x" * 201])
def test_bad_model_id(model_id):
    assert "model.model_id" in problems(body(model_id=model_id))


@pytest.mark.parametrize("provider", ["", "-x", "open ai", "a" * 65, 5])
def test_bad_provider(provider):
    assert "provider" in problems({**body(), "provider": provider})


@pytest.mark.parametrize(
    ("given", "exact"),
    [
        (0.1, "0.1"),
        ("0.15", "0.15"),
        (2.5, "2.5"),
        (10, "10"),
        ("0.000001", "0.000001"),
        (999999.999999, "999999.999999"),
    ],
)
def test_prices_are_exact_decimals_through_storage(given, exact):
    price = parse_price(given)
    assert price == Decimal(exact)
    micros = to_micros(price)
    assert isinstance(micros, int)
    back = from_micros(micros)
    assert back == Decimal(exact)
    # the JSON text of the answer, read as a decimal, is exactly the price (no binary-float residue)
    assert Decimal(json.dumps(price_json(back))) == Decimal(exact)


@pytest.mark.parametrize(
    ("model_type", "window"), [("chat", 1), ("chat", 1023), ("completion", 512), ("embedding", 127)]
)
def test_a_context_window_that_would_block_every_call_is_refused(model_type, window):
    found = problems(body(modelType=model_type, contextWindow=window))
    assert "would block nearly every agent call" in found["model.contextWindow"]


@pytest.mark.parametrize(("model_type", "window"), [("chat", 1024), ("embedding", 256), ("rerank", 128)])
def test_the_smallest_sane_context_windows_are_accepted(model_type, window):
    parsed = ModelUpsert.model_validate(body(modelType=model_type, contextWindow=window))
    assert parsed.model.context_window == window
