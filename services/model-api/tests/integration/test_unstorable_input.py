"""Text PostgreSQL cannot hold (a NUL; a lone surrogate in a JSON body) never reaches a statement: the API says
which field is wrong (422), an id that cannot exist is not found (404), and a sign-in with one is a failed sign-in.
"""

import json

import httpx

from stockade.contracts.replies import ErrorReply
from stockade.model_api.catalogue.commands import answer_get

NUL = "\x00"
MODEL = {"model_id": "m1", "displayName": "M", "modelType": "chat"}


def _raw(console, cookies=None) -> httpx.AsyncClient:
    """A client of the same app that answers a 500 as a response (instead of raising the app's exception)."""
    transport = httpx.ASGITransport(app=console.app, raise_app_exceptions=False)
    return httpx.AsyncClient(transport=transport, base_url="http://testserver", cookies=cookies)


async def test_json_api_refuses_unstorable_fields_and_ids(console, client):
    await console.make_platform_admin()
    async with _raw(console, client.cookies) as raw:
        csrf = (await raw.get("/api/platform/session")).json()["csrfToken"]
        headers = {"content-type": "application/json", "X-CSRF-Token": csrf}
        for path, body in (
            ("/api/platform/models", {"provider": "a", "model": {**MODEL, "model_id": "x\ud800"}}),
            ("/api/platform/models", {"provider": "a", "model": {**MODEL, "displayName": "x\ud800"}}),
            ("/api/platform/models", {"provider": "a", "model": {**MODEL, "displayName": "x" + NUL}}),
            ("/api/platform/db-configs", {"name": "n", "db_type": "mongodb", "description": "d" + NUL}),
            ("/api/platform/db-configs", {"name": "n", "db_type": "mongodb", "description": "d\udc00"}),
        ):
            r = await raw.post(path, content=json.dumps(body).encode(), headers=headers)
            assert r.status_code == 422 and r.json()["error"]["code"] == "invalid_request", (body, r.text)
        deep = b'{"provider": ' + b"[" * 20_000 + b"]" * 20_000 + b"}"  # under the 64 KiB limit
        assert (await raw.post("/api/platform/models", content=deep, headers=headers)).status_code == 422
        activate = await raw.post("/api/platform/db-configs/a%00b/activate", headers=headers)
        assert activate.status_code == 404 and activate.json()["error"]["code"] == "not_found"
        gone = await raw.delete(
            "/api/platform/models", params={"provider": "a", "model_id": "m" + NUL}, headers=headers
        )
        assert gone.status_code == 422
        listed = (await raw.get("/api/platform/db-configs")).json()["dbConfigs"]
    assert [c["name"] for c in listed] == ["default"]


async def test_console_forms_with_unstorable_values_get_pages_not_500(console, client):
    await console.make_platform_admin()
    async with _raw(console, client.cookies) as raw:
        csrf = (await raw.get("/api/platform/session")).json()["csrfToken"]
        created = await raw.post(
            "/db-configs",
            data={"name": "n", "db_type": "mongodb", "description": "d" + NUL, "csrf_token": csrf},
        )
        assert created.status_code == 422 and "NUL" in created.text
        activated = await raw.post("/db-configs/a%00/activate", data={"csrf_token": csrf})
        assert activated.status_code == 404
        deleted = await raw.post(
            "/models/delete", data={"provider": "a" + NUL, "model_id": "b" + NUL, "csrf_token": csrf}
        )
        assert deleted.status_code == 404


async def test_a_sign_in_with_a_nul_in_the_email_is_a_failed_sign_in(console):
    async with _raw(console) as anonymous:
        for email in (console.email + NUL, NUL):
            r = await anonymous.post("/login", data={"email": email, "password": "x" * 10})
            assert r.status_code == 401 and "Wrong e-mail or password." in r.text


async def test_the_bus_command_reports_unstorable_ids_as_not_found(console):
    for request in ({"db_config_id": "a" + NUL}, {"provider": "openai", "model_id": "gpt" + NUL}):
        reply = await answer_get(console.sessions, json.dumps(request).encode())
        assert isinstance(reply, ErrorReply) and reply.error.code == "not_found", reply
