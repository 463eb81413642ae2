"""The console's price form takes an effective time: a later price is scheduled, the one in force stays, and
agents see both (``model.cmd.get.v1``'s price history). Real headless Chromium against model-api on a real socket,
PostgreSQL and NATS; the form's refusal of an unreadable time is checked over ASGI."""

import json
from datetime import UTC, datetime, timedelta

import pytest

from stockade.contracts import subjects

SCREENSHOT = "/tmp/model-api-price-history.png"


@pytest.mark.browser
async def test_a_price_scheduled_in_the_form_is_kept_beside_the_one_in_force(
    served, browser_page, nats_client, unique_name
):
    page, base = browser_page, served.base_url
    model_id = unique_name("gpt")
    await page.goto(f"{base}/login?next=/models")
    await page.fill("input[name=email]", served.console.email)
    await page.fill("input[name=password]", served.console.password)
    await page.click("button[type=submit]")
    await page.wait_for_url(f"{base}/models")

    form = "#model-form"
    await page.fill(f"{form} input[name=provider]", "openai")
    await page.fill(f"{form} input[name=model_id]", model_id)
    await page.fill(f"{form} input[name=displayName]", "Scheduled")
    await page.fill(f"{form} input[name=inputPricePerMToken]", "2.5")
    await page.fill(f"{form} input[name=outputPricePerMToken]", "10")
    async with page.expect_navigation():  # saved through the JSON API, then the page is shown again
        await page.click(f"{form} button[type=submit]")
    assert f"Added openai/{model_id}." in await page.text_content("[role=status]")

    # edit: new prices from tomorrow 09:30 UTC, typed into the browser's date-time field
    later = (datetime.now(UTC) + timedelta(days=1)).replace(hour=9, minute=30, second=0, microsecond=0)
    row = page.locator(f'tr[data-model-id="{model_id}"]')
    await row.get_by_role("link", name="Edit").click()
    await page.wait_for_load_state()
    assert await page.input_value(f"{form} input[name=effectiveAt]") == ""  # default: now
    await page.fill(f"{form} input[name=inputPricePerMToken]", "5")
    await page.fill(f"{form} input[name=outputPricePerMToken]", "20")
    await page.fill(f"{form} input[name=effectiveAt]", later.strftime("%Y-%m-%dT%H:%M"))
    async with page.expect_navigation():  # saved through the JSON API, then the page is shown again
        await page.click(f"{form} button[type=submit]")
    assert f"Saved openai/{model_id}." in await page.text_content("[role=status]")

    await row.get_by_role("link", name="Edit").click()
    await page.wait_for_load_state()
    history = page.locator("[data-testid=price-history] tbody tr")
    assert await history.count() == 2
    in_force, scheduled = [await history.nth(i).inner_text() for i in range(2)]
    assert await history.nth(0).get_attribute("data-state") == "in force" and "2.5" in in_force
    assert await history.nth(1).get_attribute("data-state") == "scheduled" and "5" in scheduled
    assert later.strftime("%Y-%m-%d %H:%M") in scheduled  # the typed time, read as UTC
    await page.screenshot(path=SCREENSHOT, full_page=True)

    # what an agent's CatalogueClient gets: both prices, the later one from the typed time
    request = json.dumps({"provider": "openai", "model_id": model_id}).encode()
    reply = json.loads((await nats_client.request(subjects.MODEL_CMD_GET, request, timeout=10)).data)
    prices = [
        (datetime.fromisoformat(p["effectiveAt"]), p["inputPricePerMToken"]) for p in reply["priceHistory"]
    ]
    assert [p for _, p in prices] == [2.5, 5] and prices[1][0] == later


async def test_an_unreadable_effective_time_is_refused_next_to_the_form(client, unique_name):
    token = (await client.get("/api/platform/session")).json()["csrfToken"]
    model_id = unique_name("gpt")
    form = {"csrf_token": token, "provider": "openai", "model_id": model_id, "displayName": "x"}
    form |= {"modelType": "chat", "inputPricePerMToken": "1"}
    refused = await client.post("/models", data={**form, "effectiveAt": "next tuesday"})
    assert refused.status_code == 422 and "effectiveAt" in refused.text
    assert 'value="next tuesday"' in refused.text  # what was typed stays in the form
    listing = (await client.get("/api/platform/models", params={"provider": "openai"})).json()
    assert model_id not in json.dumps(listing)

    with_zone = await client.post("/models", data={**form, "effectiveAt": "2026-01-01T10:00+02:00"})
    assert with_zone.status_code == 303, with_zone.text
    edit = await client.get("/models", params={"provider": "openai", "model_id": model_id})
    assert '<time datetime="2026-01-01T08:00:00+00:00">2026-01-01 08:00</time>' in edit.text  # shown in UTC
