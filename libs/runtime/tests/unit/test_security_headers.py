"""stockade.runtime.security_headers: every response gets the headers; a route's own value and a service's
overrides win; FastAPI's docs pages keep working (no content security policy there)."""

import httpx
from fastapi import FastAPI
from fastapi.responses import PlainTextResponse

from stockade.runtime.errors import install_error_handlers
from stockade.runtime.security_headers import API_CSP, DEFAULT_HEADERS, install_security_headers


def _app(overrides=None, **kw) -> FastAPI:
    app = FastAPI()
    install_error_handlers(app)
    install_security_headers(app, overrides, **kw)

    @app.get("/json")
    async def json_route() -> dict[str, int]:
        return {"n": 1}

    @app.get("/own")
    async def own() -> PlainTextResponse:
        return PlainTextResponse(
            "x", headers={"Content-Security-Policy": "sandbox", "X-Frame-Options": "DENY"}
        )

    @app.get("/typed")
    async def typed(n: int) -> dict[str, int]:
        return {"n": n}

    return app


async def _get(app: FastAPI, path: str, scheme: str = "http") -> httpx.Response:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=f"{scheme}://t") as client:
        return await client.get(path)


async def test_defaults_on_answers_and_errors():
    app = _app()
    for path, status in (("/json", 200), ("/missing", 404), ("/typed?n=x", 422)):
        r = await _get(app, path)
        assert r.status_code == status
        for name, value in DEFAULT_HEADERS.items():
            assert r.headers[name] == value, (path, name)
            assert len(r.headers.get_list(name)) == 1, (path, name)


async def test_a_route_keeps_its_own_value_and_overrides_replace_or_drop():
    own = await _get(_app(), "/own")
    assert own.headers.get_list("content-security-policy") == ["sandbox"]
    assert own.headers.get_list("x-frame-options") == ["DENY"]
    assert own.headers["x-content-type-options"] == "nosniff"
    app = _app({"Content-Security-Policy": "default-src 'self'", "Cross-Origin-Resource-Policy": None})
    r = await _get(app, "/json")
    assert r.headers["content-security-policy"] == "default-src 'self'"
    assert "cross-origin-resource-policy" not in r.headers and r.headers["referrer-policy"] == "no-referrer"


async def test_docs_pages_get_every_header_but_the_policy():
    app = _app()
    docs = await _get(app, "/docs")
    assert docs.status_code == 200 and "content-security-policy" not in docs.headers
    assert docs.headers["x-content-type-options"] == "nosniff"
    assert (await _get(app, "/openapi.json")).headers["content-security-policy"] == API_CSP


async def test_hsts_only_over_https():
    assert "strict-transport-security" not in (await _get(_app(), "/json")).headers
    assert (await _get(_app(), "/json", "https")).headers["strict-transport-security"] == "max-age=31536000"
    shorter = await _get(_app(hsts_max_age_s=300), "/missing", "https")
    assert shorter.headers["strict-transport-security"] == "max-age=300"
    assert "strict-transport-security" not in (await _get(_app(hsts_max_age_s=0), "/json", "https")).headers
