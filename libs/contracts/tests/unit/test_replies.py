"""The reply models of stockade.contracts.replies: the wire shape both ends agree on."""

from __future__ import annotations

import json

from stockade.contracts.replies import (
    ErrorReply,
    HealthReply,
    ModelGetQuery,
    ModelGetReply,
    PricePoint,
    ProviderModels,
    SubmitReply,
)


def test_an_error_reply_is_the_house_shape_and_is_told_from_an_answer() -> None:
    body = ErrorReply.of("unavailable", "the key store is unavailable").to_bytes()
    assert json.loads(body) == {"error": {"code": "unavailable", "message": "the key store is unavailable"}}
    parsed = ErrorReply.parse(body)
    assert parsed is not None and parsed.error.code == "unavailable"
    assert ErrorReply.parse(b'{"valid": false, "reason": "unknown key", "key_id": "k"}') is None
    assert ErrorReply.parse(b"not json") is None


def test_a_model_reply_sends_only_its_shape_with_camel_case_names() -> None:
    one = ModelGetReply(
        db_config={"id": "c1", "description": None},
        provider="openai",
        model={"modelId": "gpt", "contextWindow": None},
        price_history=[PricePoint(effective_at="2026-01-01T00:00:00+00:00", input_price_per_m_token=2,
                                  output_price_per_m_token=None)],
    )  # fmt: skip
    wire = json.loads(one.to_bytes())
    assert set(wire) == {"dbConfig", "provider", "model", "priceHistory"}  # no "providers"
    assert wire["model"] == {"modelId": "gpt", "contextWindow": None}  # records pass unchanged
    assert wire["priceHistory"] == [
        {"effectiveAt": "2026-01-01T00:00:00+00:00", "inputPricePerMToken": 2, "outputPricePerMToken": None}
    ]
    assert ModelGetReply.model_validate_json(one.to_bytes()) == one
    many = ModelGetReply(
        db_config={}, providers=[ProviderModels(provider="openai", models=[{"modelId": "a"}])]
    )
    assert set(json.loads(many.to_bytes())) == {"dbConfig", "providers"}
    assert ModelGetQuery.model_validate_json(b'{"provider": "openai", "extra": 1}').model_id is None


def test_a_submit_reply_carries_what_the_agent_bus_reads() -> None:
    delivered = SubmitReply(status="delivered", receiver="executor", nonce="n1")
    assert json.loads(delivered.to_bytes()) == {"status": "delivered", "receiver": "executor", "nonce": "n1"}
    rejected = SubmitReply(status="rejected", receiver="executor", reason="replay", layer=None)
    assert json.loads(rejected.to_bytes()) == {
        "status": "rejected",
        "receiver": "executor",
        "reason": "replay",
        "layer": None,
    }


def test_a_health_reply_keeps_fields_a_service_adds() -> None:
    health = HealthReply.model_validate({"status": "ok", "service": "svc", "queue": 3})
    assert json.loads(health.to_bytes()) == {"status": "ok", "service": "svc", "queue": 3}
    assert HealthReply(status="ok", service="trust-broker", agents=4).as_json() == {
        "status": "ok",
        "service": "trust-broker",
        "agents": 4,
    }
