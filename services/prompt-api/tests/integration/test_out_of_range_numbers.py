"""Numbers past a PostgreSQL integer (version columns, cursor keys) are a 422 at the edge, never a 500.

Found by the schemathesis run (tests/fuzz): a rollback to version 10323992681 failed in the driver.
"""

import base64
import json

import httpx
import pytest

TOO_BIG = 2**31


def _raw_client(client: httpx.AsyncClient) -> httpx.AsyncClient:
    """The same app, answering a 500 as a response (the fixture's client raises the app's exception)."""
    transport = httpx.ASGITransport(app=client.app, raise_app_exceptions=False)
    return httpx.AsyncClient(transport=transport, base_url="http://prompt-api")


def _cursor(kind: str, key: object) -> str:
    return base64.urlsafe_b64encode(json.dumps([kind, key]).encode()).decode().rstrip("=")


@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
async def test_versions_and_cursors_past_a_postgres_integer_are_422(client, world):
    headers = {"X-API-Key": world.write_key}
    body = {"project_id": world.direct.id, "prompt_name": "p", "content": "c"}
    assert (
        await client.post("/prompts/active-prompt-version", json=body, headers=headers)
    ).status_code == 201
    project = {"project_id": world.direct.id}
    async with _raw_client(client) as raw:
        answers = [
            await raw.post("/prompts/p/rollback", json={**project, "version": TOO_BIG}, headers=headers),
            await raw.get("/skills/s", params={**project, "version": TOO_BIG}, headers=headers),
            await raw.get("/skills/s/SKILL.md", params={**project, "version": TOO_BIG}, headers=headers),
            await raw.get(
                "/prompts/p/versions",
                params={**project, "cursor": _cursor("prompt-versions", TOO_BIG)},
                headers=headers,
            ),
            await raw.get(
                "/prompts", params={**project, "cursor": _cursor("prompts", "a\ud800")}, headers=headers
            ),
        ]
    for r in answers:
        assert r.status_code == 422, (r.request.url, r.status_code, r.text)
        assert r.json()["error"]["code"] == "invalid_request"
