"""The catalogue reaches agents: ``LLMRails`` with a :class:`CatalogueClient` costs its calls at model-api's prices
(``model.cmd.get.v1`` over a real nats-server, model-api on real PostgreSQL), and a price changed through the API
applies to the running agent's next call once ``model.changed.v1`` arrives. YAML stays the fallback."""

import asyncio
import json
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from stockade.contracts import subjects
from stockade.contracts.nats_sync import sync_with_server
from stockade.guardrails import LLMRails
from stockade.guardrails.llm.catalogue import CatalogueClient
from stockade.guardrails.messages import ModelResponse, TokenUsage
from stockade.guardrails.system import GuardrailSystem
from stockade.guardrails.testing import FakeModelProvider

pytestmark = [pytest.mark.postgres, pytest.mark.nats]

NO_BUILTIN_CHECKS = {"pii": {"enabled": False}, "exfiltration": {"enabled": False}}
NO_BUILTIN_CHECKS["classification"] = {"enabled": False}
USAGE = TokenUsage(input_tokens=1000, output_tokens=500)


def rails_for(model_id: str, catalogue: CatalogueClient | None) -> LLMRails:
    config = {
        "guardrails": {"checks": NO_BUILTIN_CHECKS},
        "models": [
            {
                "provider": "openai",
                "model": model_id,
                "input_price_per_mtok": "1.00",  # the offline YAML prices
                "output_price_per_mtok": "2.00",
            }
        ],
    }
    system = GuardrailSystem(config)
    provider = FakeModelProvider([ModelResponse(text="ok", usage=USAGE)], model=model_id)
    return LLMRails(config, provider=provider, system=system, catalogue=catalogue)


async def put_model(
    client,
    model_id: str,
    input_price: str,
    output_price: str,
    effective_at: datetime | None = None,
    context_window: int = 128000,
) -> None:
    body: dict = {
        "provider": "openai",
        "model": {
            "model_id": model_id,
            "displayName": model_id,
            "modelType": "chat",
            "contextWindow": context_window,
            "inputPricePerMToken": input_price,
            "outputPricePerMToken": output_price,
            "capabilities": ["text", "tools"],
        },
    }
    if effective_at is not None:
        body["effectiveAt"] = effective_at.isoformat()
    response = await client.post("/api/platform/models", json=body)
    assert response.status_code in (200, 201), response.text


async def change_seen(nats_client, model_id: str, put) -> None:
    """Run ``put`` and wait until its ``model.changed.v1`` event is on the bus (the outbox relays it)."""
    events = await nats_client.subscribe(subjects.MODEL_CHANGED)
    await sync_with_server(nats_client)
    await put

    async def ours() -> None:
        while True:  # the NATS server is shared with other tests: skip their changes
            if json.loads((await events.next_msg(timeout=10)).data)["model_id"] == model_id:
                return

    await asyncio.wait_for(ours(), timeout=15)
    await events.unsubscribe()


async def test_a_price_changed_in_model_api_costs_the_next_call(client, nats_client, unique_name):
    model_id = unique_name("gpt")
    await change_seen(nats_client, model_id, put_model(client, model_id, "2.50", "10.00"))
    catalogue = CatalogueClient(nats_client)
    await catalogue.start()
    try:
        rails = rails_for(model_id, catalogue)
        first = await rails.agenerate("hello")
        assert first.cost == Decimal("0.0075")  # 1000 * 2.50/1M + 500 * 10/1M: the catalogue's, not YAML's
        entry = catalogue.cached("openai", model_id)
        assert (
            entry is not None and entry.context_window == 128000 and entry.capabilities == ("text", "tools")
        )

        again = await rails.agenerate("hello again")
        assert again.cost == Decimal("0.0075") and catalogue.requests == 1  # served from the cache

        changed_at = time.perf_counter()
        await put_model(client, model_id, "5.00", "20.00")
        for _ in range(1000):  # the change event drops the cached entry (bounded wait, no timing asserted)
            if catalogue.cached("openai", model_id) is None:
                break
            await asyncio.sleep(0.01)
        invalidated_ms = (time.perf_counter() - changed_at) * 1000
        print(f"price change reached the agent's cache in {invalidated_ms:.0f} ms")

        after = await rails.agenerate("and now?")
        assert after.cost == Decimal("0.015")  # 1000 * 5/1M + 500 * 20/1M
        assert catalogue.requests == 2
    finally:
        await catalogue.close()


async def test_a_price_effective_later_leaves_calls_before_it_at_the_old_price(
    client, nats_client, unique_name
):
    model_id = unique_name("gpt")
    await change_seen(nats_client, model_id, put_model(client, model_id, "2.50", "10.00"))
    later = datetime.now(UTC) + timedelta(hours=1)
    events = await nats_client.subscribe(subjects.MODEL_CHANGED)
    await sync_with_server(nats_client)
    await put_model(client, model_id, "5.00", "20.00", effective_at=later)
    while True:  # the change event carries the effective time
        event = json.loads((await events.next_msg(timeout=10)).data)
        if event["model_id"] == model_id:
            break
    await events.unsubscribe()
    assert datetime.fromisoformat(event["effective_at"]) == later

    catalogue = CatalogueClient(nats_client)
    await catalogue.start()
    try:
        result = await rails_for(model_id, catalogue).agenerate("hello")
        assert result.cost == Decimal("0.0075")  # the new price is not in force yet
        entry = catalogue.cached("openai", model_id)
        assert entry is not None and len(entry.price_history) == 2  # history kept
        assert entry.prices_at(later - timedelta(seconds=1)) == (Decimal("2.5"), Decimal("10"))
        assert entry.prices_at(later) == (Decimal("5"), Decimal("20"))
    finally:
        await catalogue.close()


async def test_a_request_larger_than_the_catalogues_context_window_never_reaches_the_model(
    client, nats_client, unique_name
):
    model_id = unique_name("small")
    await change_seen(nats_client, model_id, put_model(client, model_id, "1", "1", context_window=1024))
    catalogue = CatalogueClient(nats_client)
    await catalogue.start()
    try:
        rails = rails_for(model_id, catalogue)
        result = await rails.agenerate("word " * 3000)
        assert not result.passed and not result.model_called and "context window (1" in (result.error or "")
        assert (await rails.agenerate("hi")).passed
    finally:
        await catalogue.close()


async def test_sync_generate_uses_the_cached_catalogue_and_never_waits_on_the_bus(
    client, nats_client, unique_name
):
    model_id = unique_name("gpt")
    await change_seen(nats_client, model_id, put_model(client, model_id, "2.50", "10.00"))
    catalogue = CatalogueClient(nats_client)
    await catalogue.start()
    try:
        warm = rails_for(model_id, catalogue)
        await warm.agenerate("warm the cache")
        # generate() runs its own event loop (in a thread here): the cached catalogue entry still prices it.
        assert (await asyncio.to_thread(warm.generate, "hello")).cost == Decimal("0.0075")
        cold = rails_for(unique_name("cold"), catalogue)
        asked = catalogue.requests
        assert (await asyncio.to_thread(cold.generate, "hello")).cost == Decimal("0.002")  # YAML
        assert catalogue.requests == asked  # no request from the foreign loop
    finally:
        await catalogue.close()


async def test_an_effective_time_without_a_zone_is_a_client_error(client, unique_name):
    body = {
        "provider": "openai",
        "model": {"model_id": unique_name("gpt"), "displayName": "x", "modelType": "chat"},
        "effectiveAt": "2026-01-01T00:00:00",
    }
    response = await client.post("/api/platform/models", json=body)
    assert response.status_code == 422 and "effectiveAt" in response.text, response.text


async def test_a_model_model_api_does_not_know_is_priced_from_yaml(console, nats_client, unique_name):
    catalogue = CatalogueClient(nats_client)
    await catalogue.start()
    try:
        result = await rails_for(unique_name("unknown"), catalogue).agenerate("hello")
        assert result.cost == Decimal("0.002")  # 1000 * 1/1M + 500 * 2/1M
    finally:
        await catalogue.close()


async def test_no_model_api_on_the_bus_falls_back_to_yaml(nats_client, unique_name):
    # No model-api app runs in this test: the request finds no responder and YAML applies.
    catalogue = CatalogueClient(nats_client, timeout=0.5)
    result = await rails_for(unique_name("offline"), catalogue).agenerate("hello")
    assert result.cost == Decimal("0.002")
