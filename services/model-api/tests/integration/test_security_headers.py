"""Every answer of model-api carries the runtime's security headers; the console keeps its own, stricter for
pages, content security policy (its own script and styles only) and a same-origin referrer policy."""

CONSOLE_CSP = (
    "default-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'; object-src 'none'"
)


async def test_console_pages_and_api_answers_carry_the_headers(console, client, anonymous):
    for path in (
        "/login",
        "/models",
        "/api/platform/models",
        "/api/platform/nothing-here",
        "/static/console.css",
    ):
        r = await client.get(path)
        assert r.headers.get_list("content-security-policy") == [CONSOLE_CSP], path
        assert r.headers["x-content-type-options"] == "nosniff", path
        assert r.headers["x-frame-options"] == "DENY", path
        assert r.headers["referrer-policy"] == "same-origin", path
        assert r.headers["cross-origin-resource-policy"] == "same-origin", path
