"""Sign-in flow, session cookie attributes, sign-out, expiry, CSRF on console forms, login rate limit."""

from datetime import timedelta

import httpx
from sqlalchemy import update

from stockade.identity.sessions import ConsoleSession
from stockade.model_api.main import create_app
from stockade.runtime.db_types import utcnow

PASSWORD = "correct horse battery staple"  # the console fixture's user


async def test_sign_in_sets_a_hardened_cookie_and_redirects_to_a_local_page(console, anonymous):
    page = await anonymous.get("/login", params={"next": "/db-configs"})
    assert page.status_code == 200 and 'name="password"' in page.text and 'value="/db-configs"' in page.text
    response = await anonymous.post(
        "/login", data={"email": console.email.upper(), "password": PASSWORD, "next": "/db-configs"}
    )
    assert response.status_code == 303 and response.headers["location"] == "/db-configs"
    cookie = response.headers["set-cookie"]
    assert cookie.startswith("stockade_session=") and "HttpOnly" in cookie and "SameSite=lax" in cookie
    assert (
        "Path=/" in cookie and "Max-Age=43200" in cookie and "Secure" not in cookie
    )  # plain http, secure=auto
    me = (await anonymous.get("/api/platform/session")).json()
    assert me["user"]["email"] == console.email and len(me["csrfToken"]) == 64


async def test_secure_attribute_is_configurable(postgres_database, nats_url, settings_for, login):
    settings = settings_for(postgres_database, nats_url)
    settings.session.secure = "always"
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        async with app.state.service.sessions() as s:
            from stockade.identity import create_user

            await create_user(s, "sec@example.org", PASSWORD)
            await s.commit()
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
            response = await login(c, "sec@example.org")
    assert "Secure" in response.headers["set-cookie"]


async def test_open_redirects_are_not_followed(console, anonymous):
    for target in ("https://evil.example/", "//evil.example/x", "/\\evil.example"):
        response = await anonymous.post(
            "/login", data={"email": console.email, "password": PASSWORD, "next": target}
        )
        assert response.headers["location"] == "/models", target


async def test_wrong_password_and_unknown_user_get_the_same_answer(console, anonymous):
    wrong = await anonymous.post("/login", data={"email": console.email, "password": "nope-nope"})
    unknown = await anonymous.post("/login", data={"email": "ghost@example.org", "password": "nope-nope"})
    assert wrong.status_code == unknown.status_code == 401
    assert "Wrong e-mail or password." in wrong.text and "Wrong e-mail or password." in unknown.text
    assert "set-cookie" not in wrong.headers


async def test_failed_sign_ins_are_rate_limited_per_email(console, anonymous, login):
    for _ in range(3):  # the test settings allow 3 failures per e-mail
        assert (await login(anonymous, console.email, "bad password")).status_code == 401
    limited = await login(anonymous, console.email)  # even the right password waits now
    assert limited.status_code == 429 and int(limited.headers["retry-after"]) > 0
    assert "Too many failed sign-ins" in limited.text and "set-cookie" not in limited.headers
    other = f"other-{console.email}"
    await console.add_user(other)
    assert (await login(anonymous, other)).status_code == 303


async def test_sign_out_ends_the_session_at_once(console, client):
    token = client.cookies["stockade_session"]
    csrf = (await client.get("/api/platform/session")).json()["csrfToken"]
    refused = await client.post("/logout", data={"csrf_token": "forged"})
    assert refused.status_code == 403
    out = await client.post("/logout", data={"csrf_token": csrf})
    assert out.status_code == 303 and out.headers["location"] == "/login"
    assert 'stockade_session=""' in out.headers["set-cookie"] or "Max-Age=0" in out.headers["set-cookie"]
    # even a client that keeps the old cookie is signed out
    client.cookies.set("stockade_session", token)
    assert (await client.get("/api/platform/models")).status_code == 401
    page = await client.get("/models")
    assert page.status_code == 303 and page.headers["location"] == "/login?next=/models"


async def test_an_expired_session_is_refused(console, client):
    async with console.sessions() as s:
        await s.execute(update(ConsoleSession).values(expires_at=utcnow() - timedelta(seconds=1)))
        await s.commit()
    assert (await client.get("/api/platform/models")).status_code == 401


async def test_console_forms_need_the_session_csrf_token(console, client):
    form = {"provider": "openai", "model_id": "gpt-4o", "displayName": "GPT-4o", "modelType": "chat"}
    missing = await client.post("/models", data=form)
    assert missing.status_code == 403 and "CSRF" in missing.text
    csrf = (await client.get("/api/platform/session")).json()["csrfToken"]
    cross = await client.post(
        "/models", data={**form, "csrf_token": csrf}, headers={"Origin": "https://evil.example"}
    )
    assert cross.status_code == 403
    saved = await client.post(
        "/models", data={**form, "csrf_token": csrf, "capabilities": ["text", "vision"]}
    )
    assert saved.status_code == 303
    listing = (await client.get("/api/platform/models")).json()
    assert listing["providers"][0]["models"][0]["capabilities"] == ["text", "vision"]
    invalid = await client.post("/models", data={**form, "csrf_token": csrf, "inputPricePerMToken": "cheap"})
    assert (
        invalid.status_code == 422
        and "inputPricePerMToken" in invalid.text
        and 'value="cheap"' in invalid.text
    )


async def test_pages_redirect_to_sign_in_and_carry_security_headers(console, client):
    stranger = httpx.AsyncClient(transport=httpx.ASGITransport(app=console.app), base_url="http://testserver")
    for path in ("/", "/models", "/db-configs", "/api-keys"):
        response = await stranger.get(path)
        assert response.status_code == 303 and response.headers["location"].startswith("/login?next=/")
    page = await client.get("/models")
    assert page.status_code == 200
    assert page.headers["cache-control"] == "no-store" and page.headers["x-frame-options"] == "DENY"
    assert "default-src 'self'" in page.headers["content-security-policy"]
    css = await client.get("/static/console.css")
    assert css.status_code == 200 and "text/css" in css.headers["content-type"]


async def test_per_address_limit_uses_the_configured_proxy_header(postgres_database, nats_url, settings_for):
    settings = settings_for(postgres_database, nats_url)
    settings.sign_in.client_ip_header = "X-Forwarded-For"
    settings.sign_in.max_failures_per_client = 2
    settings.sign_in.max_failures_per_email = 10
    app = create_app(settings)
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://t") as c,
    ):

        async def attempt(email, address):
            data = {"email": email, "password": "wrong password"}
            return (
                await c.post("/login", data=data, headers={"X-Forwarded-For": f"spoofed, {address}"})
            ).status_code

        assert await attempt("a@example.org", "10.1.1.1") == 401
        assert await attempt("b@example.org", "10.1.1.1") == 401
        assert (
            await attempt("c@example.org", "10.1.1.1") == 429
        )  # the address is used up, whatever the e-mail
        assert await attempt("c@example.org", "10.2.2.2") == 401  # another visitor behind the same proxy
        # an IPv6 host counts as its /64: a fresh address in the same /64 has no budget left (finding M1)
        assert await attempt("d@example.org", "2001:db8:1:2::1") == 401
        assert await attempt("e@example.org", "2001:db8:1:2::ff") == 401
        assert await attempt("f@example.org", "2001:db8:1:2:abcd::7") == 429
        assert await attempt("f@example.org", "2001:db8:1:3::1") == 401  # another /64
