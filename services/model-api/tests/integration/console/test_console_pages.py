"""Console pages over ASGI: database configurations by form, API keys only for their owner, shown once."""

import re

from stockade.identity import create_api_key, list_api_keys


async def csrf(client):
    return (await client.get("/api/platform/session")).json()["csrfToken"]


async def test_db_configuration_forms_create_and_activate(console, client):
    await console.make_platform_admin()
    token = await csrf(client)
    page = await client.get("/db-configs")
    assert page.status_code == 200 and "default" in page.text and "active" in page.text
    created = await client.post(
        "/db-configs", data={"csrf_token": token, "name": "eu-mongo", "db_type": "mongodb"}
    )
    assert created.status_code == 303
    duplicate = await client.post(
        "/db-configs", data={"csrf_token": token, "name": "eu-mongo", "db_type": "mongodb"}
    )
    assert duplicate.status_code == 409 and "exists already" in duplicate.text
    bad = await client.post("/db-configs", data={"csrf_token": token, "name": "x", "db_type": "oracle"})
    assert bad.status_code == 422 and "db_type" in bad.text
    config_id = next(
        c["id"]
        for c in (await client.get("/api/platform/db-configs")).json()["dbConfigs"]
        if c["name"] == "eu-mongo"
    )
    activated = await client.post(f"/db-configs/{config_id}/activate", data={"csrf_token": token})
    assert activated.status_code == 303
    models = await client.get("/models")
    assert re.search(r'data-testid="active-config">eu-mongo<', models.text)


async def test_api_keys_page_shows_the_plaintext_once_and_revokes_only_own_keys(console, client):
    token = await csrf(client)
    created = await client.post("/api-keys", data={"csrf_token": token, "scope": "write"})
    assert created.status_code == 201 and created.headers["cache-control"] == "no-store"
    plaintext = re.search(r'id="new-key-value">(stk_[0-9A-Za-z]+)<', created.text).group(1)
    later = await client.get("/api-keys")
    assert plaintext not in later.text and f"stk_{plaintext[4:16]}...{plaintext[-4:]}" in later.text
    bad_scope = await client.post("/api-keys", data={"csrf_token": token, "scope": "admin"})
    assert bad_scope.status_code == 422 and "unknown scope" in bad_scope.text

    await console.add_user("someone-else@example.org")
    async with console.sessions() as s:
        theirs = await create_api_key(s, "someone-else@example.org")
        await s.commit()
    refused = await client.post(f"/api-keys/{theirs.id}/revoke", data={"csrf_token": token})
    assert refused.status_code == 404
    async with console.sessions() as s:
        assert (await list_api_keys(s, "someone-else@example.org"))[0].revoked_at is None
        mine = (await list_api_keys(s, console.email))[0]
    revoked = await client.post(f"/api-keys/{mine.id}/revoke", data={"csrf_token": token})
    assert revoked.status_code == 303
    async with console.sessions() as s:
        assert (await list_api_keys(s, console.email))[0].revoked_at is not None


async def test_an_ingest_key_is_made_for_a_project_of_the_signed_in_user(console, client, unique_name):
    from stockade.identity import add_project_member, create_organisation, create_project

    async with console.sessions() as s:
        org = await create_organisation(s, unique_name("org"))
        mine = await create_project(s, org.id, "agents")
        other = await create_project(s, org.id, "elsewhere")
        await add_project_member(s, mine.id, console.email)
        await s.commit()
    token = await csrf(client)
    page = await client.get("/api-keys")
    assert "Create an ingest key" in page.text
    created = await client.post(
        "/api-keys", data={"csrf_token": token, "scope": "ingest", "project": mine.id}
    )
    assert created.status_code == 201, created.text
    assert re.search(r'id="new-key-value">(stk_[0-9A-Za-z]+)<', created.text)
    async with console.sessions() as s:
        key = (await list_api_keys(s, console.email))[-1]
    assert (key.scope, key.project_id) == ("ingest", mine.id)
    assert f"project {mine.id}" in (await client.get("/api-keys")).text
    outside = await client.post(
        "/api-keys", data={"csrf_token": token, "scope": "ingest", "project": other.id}
    )
    unknown = await client.post(
        "/api-keys", data={"csrf_token": token, "scope": "ingest", "project": "x" * 32}
    )
    # another organisation's project and one that does not exist get the same answer (finding N17)
    assert outside.status_code == unknown.status_code == 422
    assert "among yours" in outside.text
    assert outside.text.replace(other.id, "X") == unknown.text.replace("x" * 32, "X")
    no_project = await client.post("/api-keys", data={"csrf_token": token, "scope": "ingest"})
    assert no_project.status_code == 422 and "needs a project" in no_project.text
