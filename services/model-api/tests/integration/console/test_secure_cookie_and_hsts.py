"""The session cookie is Secure by default (every deployment but ``stockade up``, which serves plain http);
``auto`` follows the request's scheme, which a trusted proxy reports (runtime ``http.proxy_headers``); answers
over https carry HSTS. Chromium keeps a Secure cookie from http://127.0.0.1, so the default also works for a
console on the loopback address (docker compose publishes there)."""

import httpx
import pytest

from stockade.identity import create_user
from stockade.model_api.main import create_app
from stockade.model_api.settings import SessionSettings

PASSWORD = "correct horse battery staple"


async def _sign_in(settings, base_url: str) -> httpx.Response:
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        async with app.state.service.sessions() as s:
            await create_user(s, "secure@example.org", PASSWORD)
            await s.commit()
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=base_url) as client:
            return await client.post("/login", data={"email": "secure@example.org", "password": PASSWORD})


async def test_the_cookie_is_secure_by_default(postgres_database, nats_url, settings_for):
    settings = settings_for(postgres_database, nats_url, session=SessionSettings())
    assert settings.session.secure == "always"
    signed_in = await _sign_in(settings, "http://console.internal")
    assert signed_in.status_code == 303 and "; Secure" in signed_in.headers["set-cookie"]
    assert "strict-transport-security" not in signed_in.headers  # plain http: no HSTS


@pytest.mark.parametrize(("scheme", "secure"), [("https", True), ("http", False)])
async def test_auto_follows_the_scheme_and_https_gets_hsts(
    postgres_database, nats_url, settings_for, scheme, secure
):
    settings = settings_for(postgres_database, nats_url, session=SessionSettings(secure="auto"))
    signed_in = await _sign_in(settings, f"{scheme}://console.example")
    assert signed_in.status_code == 303
    assert ("; Secure" in signed_in.headers["set-cookie"]) is secure
    assert (signed_in.headers.get("strict-transport-security") == "max-age=31536000") is secure


@pytest.mark.browser
async def test_chromium_keeps_the_default_secure_cookie_on_the_loopback_address(served, browser_page):
    served.console.app.state.service.settings.session.secure = "always"  # the default; the fixture uses auto
    page, base = browser_page, served.base_url
    await page.goto(f"{base}/models")
    await page.fill("input[name=email]", served.console.email)
    await page.fill("input[name=password]", served.console.password)
    await page.click("button[type=submit]")
    await page.wait_for_url(f"{base}/models")
    [cookie] = await page.context.cookies()
    assert cookie["secure"] and cookie["httpOnly"]
    assert await page.text_content("[data-testid=signed-in-as]") == served.console.email
