"""CatalogueClient against a real nats-server, with a hand-written responder standing in for model-api: what
it caches, what a change event drops, and that a bad or missing answer falls back (None) instead of failing."""

import asyncio
import json
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from stockade.contracts import subjects
from stockade.contracts.nats_sync import sync_with_server
from stockade.contracts.replies import ErrorReply, ModelGetReply
from stockade.guardrails.llm.catalogue import CatalogueClient

pytestmark = pytest.mark.nats


def record(model_id: str, price: float) -> dict:
    return {
        "model_id": model_id,
        "contextWindow": 8000,
        "inputPricePerMToken": price,
        "outputPricePerMToken": price * 2,
        "capabilities": ["text"],
    }


def found(model: dict, history: list[dict] | None = None) -> bytes:
    """model-api's answer for one model, built with the contract model it uses."""
    reply = {"dbConfig": {"id": "c", "name": "default"}, "provider": "openai", "model": model}
    if history is not None:
        reply["priceHistory"] = history
    return ModelGetReply.model_validate(reply).to_bytes()


async def responder(nats_client, answer):
    """Answer model.cmd.get.v1 with ``answer(request) -> bytes``; returns the list of requests seen."""
    seen: list[dict] = []

    async def handler(msg):
        request = json.loads(msg.data)
        seen.append(request)
        await msg.respond(answer(request))

    sub = await nats_client.subscribe(subjects.MODEL_CMD_GET, cb=handler)
    await sync_with_server(nats_client)
    return sub, seen


async def test_cached_until_a_change_event_names_the_model(nats_client, unique_name):
    model_id = unique_name("m")
    prices = {"now": 1.5}
    sub, seen = await responder(nats_client, lambda r: found(record(r["model_id"], prices["now"])))
    catalogue = CatalogueClient(nats_client)
    await catalogue.start()
    try:
        first = await catalogue.get("OpenAI", model_id)  # the provider is folded like model-api folds it
        assert first is not None and first.input_price_per_mtok == Decimal("1.5")
        assert first.context_window == 8000 and first.capabilities == ("text",)
        await catalogue.get("openai", model_id)
        assert len(seen) == 1 and seen[0] == {"provider": "openai", "model_id": model_id}

        prices["now"] = 3.0
        other = {"db_config_id": "c", "provider": "openai", "model_id": "someone-else", "change": "updated"}
        await nats_client.publish(subjects.MODEL_CHANGED, json.dumps(other).encode())
        ours = {**other, "model_id": model_id}
        await nats_client.publish(subjects.MODEL_CHANGED, json.dumps(ours).encode())
        await sync_with_server(nats_client)
        for _ in range(500):
            if catalogue.cached("openai", model_id) is None:
                break
            await asyncio.sleep(0.01)
        again = await catalogue.get("openai", model_id)
        assert again is not None and again.output_price_per_mtok == Decimal("6") and len(seen) == 2
    finally:
        await catalogue.close()
        await sub.unsubscribe()


async def test_activating_another_configuration_forgets_every_entry(nats_client, unique_name):
    """Each database configuration has its own catalogue, and the look-ups answer from the active one."""
    models = [unique_name("m"), unique_name("m")]
    active = {"config": "first"}
    prices = {"first": 1.0, "second": 4.0}
    sub, seen = await responder(nats_client, lambda r: found(record(r["model_id"], prices[active["config"]])))
    catalogue = CatalogueClient(nats_client)
    await catalogue.start()
    try:
        for model_id in models:
            assert (await catalogue.get("openai", model_id)).input_price_per_mtok == Decimal("1")
        active["config"] = "second"
        event = {
            "db_config_id": "second",
            "db_type": "dynamodb",
            "activated_at": datetime.now(UTC).isoformat(),
        }
        await nats_client.publish(subjects.DBCONFIG_ACTIVATED, json.dumps(event).encode())
        await sync_with_server(nats_client)
        for _ in range(500):
            if all(catalogue.cached("openai", m) is None for m in models):
                break
            await asyncio.sleep(0.01)
        for model_id in models:
            assert (await catalogue.get("openai", model_id)).input_price_per_mtok == Decimal("4")
        assert len(seen) == 4
    finally:
        await catalogue.close()
        await sub.unsubscribe()


async def test_bad_answers_are_not_cached_and_not_found_is(nats_client, unique_name):
    unavailable = ErrorReply.of("unavailable", "the model catalogue is unavailable").to_bytes()
    replies = iter([b"not json", b"[]", unavailable])
    not_found = ErrorReply.of("not_found", "no such model").to_bytes()
    sub, seen = await responder(nats_client, lambda r: next(replies, not_found))
    catalogue = CatalogueClient(nats_client)
    model_id = unique_name("m")
    try:
        for _ in range(3):
            assert await catalogue.get("openai", model_id) is None
        assert len(seen) == 3  # each bad answer asked again
        assert await catalogue.get("openai", model_id) is None  # not_found: cached as unknown
        assert await catalogue.get("openai", model_id) is None
        assert len(seen) == 4
    finally:
        await sub.unsubscribe()


async def test_prices_at_picks_the_price_in_force(nats_client, unique_name):
    history = [
        {"effectiveAt": "2026-01-01T00:00:00+00:00", "inputPricePerMToken": 1, "outputPricePerMToken": 2},
        {"effectiveAt": "2026-06-01T00:00:00+00:00", "inputPricePerMToken": 3, "outputPricePerMToken": 4},
        {"effectiveAt": "no date", "inputPricePerMToken": 9, "outputPricePerMToken": 9},
    ]
    sub, _ = await responder(
        nats_client,
        lambda r: found(record(r["model_id"], 3), history),
    )
    try:
        entry = await CatalogueClient(nats_client).get("openai", unique_name("m"))
        assert entry is not None and len(entry.price_history) == 2  # the unreadable row is skipped
        assert entry.prices_at(datetime(2026, 3, 1, tzinfo=UTC)) == (Decimal(1), Decimal(2))
        assert entry.prices_at(datetime(2026, 7, 1, tzinfo=UTC)) == (Decimal(3), Decimal(4))
        assert entry.prices_at(datetime(2025, 7, 1, tzinfo=UTC)) == (Decimal(3), Decimal(6))  # before history
    finally:
        await sub.unsubscribe()
