"""The console in real headless Chromium (Playwright) against model-api on a real socket, PostgreSQL and NATS."""

import re

import httpx
import pytest

pytestmark = pytest.mark.browser

SCREENSHOT = "/tmp/model-api-models.png"


async def test_sign_in_manage_models_and_keys_then_sign_out(served, browser_page):
    page, base = browser_page, served.base_url
    page.on("dialog", lambda dialog: dialog.accept())

    await page.goto(f"{base}/models")
    assert page.url == f"{base}/login?next=/models"
    await page.fill("input[name=email]", served.console.email)
    await page.fill("input[name=password]", "wrong password")
    await page.click("button[type=submit]")
    assert "Wrong e-mail or password." in await page.text_content("main")
    await page.fill("input[name=password]", served.console.password)
    await page.click("button[type=submit]")
    await page.wait_for_url(f"{base}/models")
    assert await page.text_content("[data-testid=signed-in-as]") == served.console.email
    assert "No models yet" in await page.text_content("main")

    async def add(provider, model_id, name, price, capabilities):
        await page.fill("#model-form input[name=provider]", provider)
        await page.fill("#model-form input[name=model_id]", model_id)
        await page.fill("#model-form input[name=displayName]", name)
        await page.select_option("#model-form select[name=modelType]", "chat")
        await page.fill("#model-form input[name=contextWindow]", "200000")
        await page.fill("#model-form input[name=inputPricePerMToken]", price)
        await page.fill("#model-form input[name=outputPricePerMToken]", "15")
        for capability in capabilities:
            await page.check(f"#model-form input[name=capabilities][value={capability}]")
        async with page.expect_navigation():  # the script saves through the API, then shows the page
            await page.click("#model-form button[type=submit]")

    await add("Anthropic", "claude-sonnet-4", "Claude Sonnet 4", "3", ["text", "vision", "tools"])
    assert "Added anthropic/claude-sonnet-4." in await page.text_content("[role=status]")
    await add("openai", "gpt-4o-mini", "GPT-4o mini", "0.15", ["text"])
    await add("openai", "gpt-4o", "GPT-4o", "2.5", ["text", "vision"])

    providers = await page.eval_on_selector_all(
        "section.provider h2", "els => els.map(e => e.firstChild.textContent.trim())"
    )
    assert providers == ["anthropic", "openai"]
    row = page.locator('section.provider[data-provider="anthropic"] tr[data-model-id="claude-sonnet-4"]')
    assert await row.count() == 1
    assert "Claude Sonnet 4" in await row.text_content() and "200,000" in await row.text_content()
    openai_rows = page.locator('section.provider[data-provider="openai"] tbody tr')
    assert await openai_rows.count() == 2
    assert "0.15" in await page.locator('tr[data-model-id="gpt-4o-mini"]').text_content()
    await page.screenshot(path=SCREENSHOT, full_page=True)

    # edit: the form comes back filled in, provider and model_id fixed
    await row.get_by_role("link", name="Edit").click()
    await page.wait_for_load_state()
    assert await page.input_value("#model-form input[name=displayName]") == "Claude Sonnet 4"
    assert await page.is_checked("#model-form input[name=capabilities][value=tools]")
    await page.fill("#model-form input[name=displayName]", "Claude Sonnet 4 (2025)")
    async with page.expect_navigation():
        await page.click("#model-form button[type=submit]")
    assert "Claude Sonnet 4 (2025)" in await row.text_content()

    # delete (after the confirmation dialog): the provider group disappears with its last model
    async with page.expect_navigation():
        await row.get_by_role("button", name=re.compile("Delete")).click()
    assert "Deleted anthropic/claude-sonnet-4." in await page.text_content("[role=status]")
    assert await page.locator('section.provider[data-provider="anthropic"]').count() == 0
    # the page and the API agree
    api = await page.evaluate("fetch('/api/platform/models').then(r => r.json())")
    assert [m["model_id"] for p in api["providers"] for m in p["models"]] == ["gpt-4o", "gpt-4o-mini"]

    # API keys: the plaintext is shown once, then only its prefix and last four
    await page.click("nav >> text=API keys")
    await page.wait_for_url(f"{base}/api-keys")
    await page.select_option("select[name=scope]", "write")
    await page.click("text=Create key")
    await page.wait_for_load_state()
    plaintext = (await page.text_content("#new-key-value")).strip()
    assert re.fullmatch(r"stk_[0-9A-Za-z]{50}", plaintext)
    listed = await page.text_content("table")
    assert plaintext[4:16] in listed and plaintext[-4:] in listed and "write" in listed
    await page.goto(f"{base}/api-keys")
    content = await page.content()
    assert plaintext not in content and await page.locator("[data-testid=new-key]").count() == 0
    await page.click("text=Revoke")
    await page.wait_for_load_state()
    assert "revoked" in await page.text_content("table")

    # sign out: back to the sign-in page, and the console is closed again
    await page.click("text=Sign out")
    await page.wait_for_url(f"{base}/login")
    await page.goto(f"{base}/models")
    assert page.url.startswith(f"{base}/login")
    cookies = await page.context.cookies()
    assert not [c for c in cookies if c["name"] == "stockade_session"]


async def test_models_api_over_a_real_socket(served, login):
    async with httpx.AsyncClient(base_url=served.base_url) as client:
        assert (await client.get("/api/platform/models")).status_code == 401
        signed = await login(client, served.console.email, served.console.password)
        assert signed.status_code == 303 and "HttpOnly" in signed.headers["set-cookie"]
        body = {
            "provider": "mistral",
            "model": {
                "model_id": "mistral-large",
                "displayName": "Mistral Large",
                "modelType": "chat",
                "inputPricePerMToken": "2",
            },
        }
        refused = await client.post("/api/platform/models", json=body)  # no X-CSRF-Token (finding L7)
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "csrf_failed"
        token = (await client.get("/api/platform/session")).json()["csrfToken"]
        created = await client.post("/api/platform/models", json=body, headers={"X-CSRF-Token": token})
        assert created.status_code == 201
        listing = (await client.get("/api/platform/models", params={"provider": "mistral"})).json()
        assert listing["providers"][0]["models"][0]["inputPricePerMToken"] == 2
        assert (await client.get("/readyz")).json()["checks"] == {"database": "ok", "nats": "ok"}


async def test_the_model_screen_writes_through_the_json_api(served, browser_page, unique_name):
    """Create, a refused edit (422 shown next to the field, what was typed kept), edit and delete: each one a
    request to /api/platform/models with the session's CSRF token, none a form post; a model someone else
    deleted meanwhile is the API's 404 on the page."""
    page, base = browser_page, served.base_url
    page.on("dialog", lambda dialog: dialog.accept())
    refused_by_csp: list[str] = []
    page.on(
        "console", lambda m: refused_by_csp.append(m.text) if "Content Security Policy" in m.text else None
    )
    sent: list[tuple[str, str, str | None]] = []
    page.on(
        "request",
        lambda r: (
            sent.append((r.method, r.url, r.headers.get("x-csrf-token"))) if r.method != "GET" else None
        ),
    )
    await page.goto(f"{base}/login?next=/models")
    await page.fill("input[name=email]", served.console.email)
    await page.fill("input[name=password]", served.console.password)
    await page.click("button[type=submit]")
    await page.wait_for_url(f"{base}/models")
    token = await page.get_attribute('meta[name="csrf-token"]', "content")
    sent.clear()  # the sign-in form's post

    form, model_id = "#model-form", unique_name("m")
    await page.fill(f"{form} input[name=provider]", "Acme")
    await page.fill(f"{form} input[name=model_id]", model_id)
    await page.fill(f"{form} input[name=displayName]", "Acme One")
    await page.fill(f"{form} input[name=contextWindow]", "32000")
    await page.fill(f"{form} input[name=inputPricePerMToken]", "0.15")
    await page.check(f"{form} input[name=capabilities][value=tools]")
    async with page.expect_navigation():
        await page.click(f"{form} button[type=submit]")
    assert f"Added acme/{model_id}." in await page.text_content("[role=status]")
    row = page.locator(f'section.provider[data-provider="acme"] tr[data-model-id="{model_id}"]')
    assert "32,000" in await row.text_content() and "0.15" in await row.text_content()

    # a window the API refuses for a chat model, and a price that is no number: 422, shown at each field
    await row.get_by_role("link", name="Edit").click()
    await page.wait_for_load_state()
    await page.fill(f"{form} input[name=contextWindow]", "100")
    await page.fill(f"{form} input[name=outputPricePerMToken]", "ten dollars")
    await page.click(f"{form} button[type=submit]")
    window_problem = page.locator("#problem-contextWindow")
    await window_problem.wait_for()
    assert "at least 1,024 tokens" in await window_problem.text_content()
    assert await page.get_attribute(f"{form} input[name=contextWindow]", "aria-invalid") == "true"
    assert await page.locator("#problem-outputPricePerMToken").count() == 1
    assert await page.locator("#problem-displayName").count() == 0
    assert "Please fix:" in await page.text_content("[data-form-problems]")
    # no page change: the form keeps what was typed
    assert page.url.endswith(f"model_id={model_id}#model-form")
    assert await page.input_value(f"{form} input[name=outputPricePerMToken]") == "ten dollars"
    await page.screenshot(path="/tmp/model-api-models-422.png", full_page=True)

    # corrected: saved, and the problems are gone with the page
    await page.fill(f"{form} input[name=contextWindow]", "64000")
    await page.fill(f"{form} input[name=outputPricePerMToken]", "0.6")
    async with page.expect_navigation():
        await page.click(f"{form} button[type=submit]")
    assert f"Saved acme/{model_id}." in await page.text_content("[role=status]")
    assert "64,000" in await row.text_content() and "0.6" in await row.text_content()

    async with page.expect_navigation():
        await row.get_by_role("button", name=re.compile("Delete")).click()
    assert f"Deleted acme/{model_id}." in await page.text_content("[role=status]")
    assert await row.count() == 0

    writes = [(method, url.removeprefix(base).split("?")[0], header) for method, url, header in sent]
    assert writes == [
        ("POST", "/api/platform/models", token),
        ("POST", "/api/platform/models", token),
        ("POST", "/api/platform/models", token),
        ("DELETE", "/api/platform/models", token),
    ]

    # a row whose model someone else deleted meanwhile: the API's 404, said on the page, nothing else changed
    other = unique_name("m")
    body = {"provider": "acme", "model": {"model_id": other, "displayName": "Other", "modelType": "chat"}}
    created = await page.evaluate(
        """([body, token]) => fetch('/api/platform/models', {method: 'POST', body: JSON.stringify(body),
             headers: {'Content-Type': 'application/json', 'X-CSRF-Token': token}}).then(r => r.status)""",
        [body, token],
    )
    assert created == 201
    await page.reload()
    gone = await page.evaluate(
        """([model_id, token]) => fetch('/api/platform/models?provider=acme&model_id=' + model_id,
             {method: 'DELETE', headers: {'X-CSRF-Token': token}}).then(r => r.status)""",
        [other, token],
    )
    assert gone == 200
    stale = page.locator(f'tr[data-model-id="{other}"]')
    await stale.get_by_role("button", name=re.compile("Delete")).click()
    problem = page.locator("#api-problems")
    await problem.wait_for()
    said = await problem.text_content()
    assert f"Could not delete acme/{other}" in said and "(404)" in said
    assert refused_by_csp == []
