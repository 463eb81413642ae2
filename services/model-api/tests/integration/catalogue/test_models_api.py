"""GET/POST/DELETE /api/platform/models over ASGI against real PostgreSQL and NATS (spec 4.2)."""

import json

from sqlalchemy import select

from stockade.contracts import ModelChanged, subjects
from stockade.contracts.nats_sync import sync_with_server

GPT = {
    "provider": "OpenAI",
    "model": {
        "id": "gpt-4o",
        "model_id": "gpt-4o-2024-08-06",
        "displayName": "GPT-4o",
        "modelType": "chat",
        "contextWindow": 128000,
        "inputPricePerMToken": 2.5,
        "outputPricePerMToken": "10.000001",
        "capabilities": ["vision", "text", "tools"],
    },
}
ENDPOINT = "/api/platform/models"


def err(response):
    body = response.json()
    assert set(body) == {"error"}, body
    return body["error"]


async def test_every_route_needs_a_session(anonymous):
    for method, kwargs in (
        ("GET", {}),
        ("POST", {"json": GPT}),
        ("DELETE", {"params": {"model_id": "x", "provider": "openai"}}),
    ):
        response = await anonymous.request(method, ENDPOINT, **kwargs)
        assert response.status_code == 401, (method, response.text)
        assert err(response)["code"] == "unauthorized"
    anonymous.cookies.set("stockade_session", "forged-token")
    assert (await anonymous.get(ENDPOINT)).status_code == 401


async def test_create_then_update_then_list_grouped_then_delete(client):
    created = await client.post(ENDPOINT, json=GPT)
    assert created.status_code == 201, created.text
    answer = created.json()
    assert answer["created"] is True and answer["provider"] == "openai"
    assert answer["model"]["outputPricePerMToken"] == 10.000001 and answer["model"]["currency"] == "USD"
    assert answer["model"]["capabilities"] == ["text", "tools", "vision"]
    assert answer["dbConfig"]["active"] is True

    changed = {**GPT, "model": {**GPT["model"], "displayName": "GPT-4o (Aug)", "inputPricePerMToken": "0.15"}}
    changed["model"].pop("contextWindow")
    updated = await client.post(ENDPOINT, json=changed)
    assert updated.status_code == 200 and updated.json()["created"] is False
    assert updated.json()["model"]["contextWindow"] is None  # replaced, not merged

    claude = {
        "provider": "anthropic",
        "model": {"model_id": "claude-sonnet-4", "displayName": "Claude Sonnet 4", "modelType": "chat"},
    }
    assert (await client.post(ENDPOINT, json=claude)).status_code == 201

    listing = (await client.get(ENDPOINT)).json()
    assert listing["total"] == 2
    assert [(p["provider"], [m["model_id"] for m in p["models"]]) for p in listing["providers"]] == [
        ("anthropic", ["claude-sonnet-4"]),
        ("openai", ["gpt-4o-2024-08-06"]),
    ]
    assert listing["providers"][1]["models"][0]["inputPricePerMToken"] == 0.15
    only = (await client.get(ENDPOINT, params={"provider": "ANTHROPIC"})).json()
    assert [p["provider"] for p in only["providers"]] == ["anthropic"] and only["total"] == 1
    assert (await client.get(ENDPOINT, params={"provider": "mistral"})).json()["providers"] == []

    deleted = await client.delete(ENDPOINT, params={"model_id": "gpt-4o-2024-08-06", "provider": "OpenAI"})
    assert deleted.status_code == 200 and deleted.json()["deleted"] is True
    again = await client.delete(ENDPOINT, params={"model_id": "gpt-4o-2024-08-06", "provider": "openai"})
    assert again.status_code == 404 and "gpt-4o-2024-08-06" in err(again)["message"]
    assert (await client.get(ENDPOINT)).json()["total"] == 1


BAD_BODIES = [
    ({"content": json.dumps(GPT), "headers": {"Content-Type": "text/plain"}}, 415, "application/json"),
    ({"data": {"provider": "openai"}}, 415, "application/json"),
    ({"content": b"{not json", "headers": {"Content-Type": "application/json"}}, 422, "malformed JSON"),
    ({"content": b"", "headers": {"Content-Type": "application/json"}}, 422, "empty"),
    ({"content": b'{"provider": NaN}', "headers": {"Content-Type": "application/json"}}, 422, "NaN"),
    ({"content": b"\xff\xfe", "headers": {"Content-Type": "application/json"}}, 422, "UTF-8"),
    ({"json": [GPT]}, 422, "JSON object"),
    ({"json": {"provider": "openai"}}, 422, "model: Field required"),
    ({"json": {**GPT, "model": {**GPT["model"], "modelType": "llm"}}}, 422, "model.modelType"),
    ({"json": {**GPT, "model": {**GPT["model"], "capabilities": ["telepathy"]}}}, 422, "capabilities"),
    (
        {"json": {**GPT, "model": {**GPT["model"], "inputPricePerMToken": -1}}},
        422,
        "must not be negative",
    ),
    ({"json": {**GPT, "model": {**GPT["model"], "contextwindow": 1}}}, 422, "model.contextwindow"),
    ({"json": {**GPT, "provider": "open ai"}}, 422, "provider"),
    ({"json": {"provider": "x", "model": {"model_id": "m" * 70000}}}, 413, "larger than"),
]


async def test_bad_bodies_get_clear_errors_and_change_nothing(client):
    for kwargs, status, fragment in BAD_BODIES:  # one app for all cases: a fresh database each costs ~2 s
        response = await client.post(ENDPOINT, **kwargs)
        assert response.status_code == status, (kwargs, response.text)
        assert fragment in err(response)["message"], (kwargs, response.text)
    assert (await client.get(ENDPOINT)).json()["total"] == 0


async def test_delete_needs_both_query_parameters(client):
    for params, missing in (
        ({"provider": "openai"}, "model_id"),
        ({"model_id": "x"}, "provider"),
        ({}, "model_id"),
    ):
        response = await client.delete(ENDPOINT, params=params)
        assert response.status_code == 422 and missing in err(response)["message"]
    response = await client.delete(ENDPOINT, params={"provider": "bad provider!", "model_id": "x"})
    assert response.status_code == 422 and "provider" in err(response)["message"]


async def test_cross_site_writes_and_wrong_csrf_tokens_are_refused(client):
    session = (await client.get("/api/platform/session")).json()
    evil = await client.post(ENDPOINT, json=GPT, headers={"Origin": "https://evil.example"})
    assert evil.status_code == 403 and err(evil)["code"] == "csrf_failed"
    wrong = await client.post(ENDPOINT, json=GPT, headers={"X-CSRF-Token": "0" * 64})
    assert wrong.status_code == 403
    referer = await client.delete(
        ENDPOINT, params={"model_id": "x", "provider": "y"}, headers={"Referer": "https://evil.example/page"}
    )
    assert referer.status_code == 403
    ok = await client.post(
        ENDPOINT, json=GPT, headers={"X-CSRF-Token": session["csrfToken"], "Origin": "http://testserver"}
    )
    assert ok.status_code == 201
    assert (await client.get(ENDPOINT)).json()["total"] == 1


async def test_changes_are_published_to_jetstream_with_the_event_id_as_msg_id(console, client, nats_client):
    sub = await nats_client.subscribe(subjects.MODEL_CHANGED)
    try:
        await sync_with_server(nats_client)
        assert (await client.post(ENDPOINT, json=GPT)).status_code == 201
        assert (await client.post(ENDPOINT, json=GPT)).status_code == 200
        gone = await client.delete(
            ENDPOINT, params={"model_id": GPT["model"]["model_id"], "provider": "openai"}
        )
        assert gone.status_code == 200
        received = [await sub.next_msg(timeout=5) for _ in range(3)]
    finally:
        await sub.unsubscribe()
    events = [ModelChanged.model_validate_json(m.data) for m in received]
    assert [(e.provider, e.model_id, e.change) for e in events] == [
        ("openai", "gpt-4o-2024-08-06", change) for change in ("created", "updated", "deleted")
    ]
    assert all(m.headers["Nats-Msg-Id"] == str(e.event_id) for m, e in zip(received, events))
    # JetStream stored it and a retried publish of the same event is recognised as a duplicate
    js = nats_client.jetstream()
    ack = await js.publish(
        subjects.MODEL_CHANGED, received[0].data, headers={"Nats-Msg-Id": str(events[0].event_id)}
    )
    assert ack.stream == subjects.stream_for(subjects.MODEL_CHANGED) and ack.duplicate is True


async def test_nats_get_command_answers_from_the_active_catalogue(console, client, nats_client):
    assert (await client.post(ENDPOINT, json=GPT)).status_code == 201
    reply = await nats_client.request(
        subjects.MODEL_CMD_GET,
        json.dumps({"provider": "OpenAI", "model_id": "gpt-4o-2024-08-06"}).encode(),
        timeout=5,
    )
    answer = json.loads(reply.data)
    assert answer["provider"] == "openai" and answer["model"]["displayName"] == "GPT-4o"
    listing = json.loads(
        (await nats_client.request(subjects.MODEL_CMD_GET, b'{"provider": "openai"}', timeout=5)).data
    )
    assert [p["provider"] for p in listing["providers"]] == ["openai"]
    missing = json.loads(
        (
            await nats_client.request(
                subjects.MODEL_CMD_GET, b'{"provider": "openai", "model_id": "nope"}', timeout=5
            )
        ).data
    )
    assert missing["error"]["code"] == "not_found"
    garbage = json.loads((await nats_client.request(subjects.MODEL_CMD_GET, b"[1,2", timeout=5)).data)
    assert garbage["error"]["code"] == "invalid_request"


async def test_db_configurations_switch_the_catalogue_and_publish_activation(console, client, nats_client):
    from stockade.identity.sessions import ConsoleSession

    assert (await client.post(ENDPOINT, json=GPT)).status_code == 201
    body = {"name": "staging", "db_type": "mongodb"}
    refused = await client.post("/api/platform/db-configs", json=body)  # not a platform administrator
    assert refused.status_code == 403 and err(refused)["code"] == "forbidden"
    assert (await client.get("/api/platform/audit")).status_code == 403
    await console.make_platform_admin()
    created = await client.post("/api/platform/db-configs", json=body)
    assert created.status_code == 201 and created.json()["active"] is False
    dup = await client.post("/api/platform/db-configs", json={"name": "staging", "db_type": "mongodb"})
    assert dup.status_code == 409 and err(dup)["code"] == "conflict"
    bad = await client.post("/api/platform/db-configs", json={"name": "x", "db_type": "oracle"})
    assert bad.status_code == 422
    sub = await nats_client.subscribe(subjects.DBCONFIG_ACTIVATED)
    await sync_with_server(nats_client)
    activated = await client.post(f"/api/platform/db-configs/{created.json()['id']}/activate")
    assert activated.status_code == 200 and activated.json()["active"] is True
    listing = (await client.get(ENDPOINT)).json()
    assert listing["dbConfig"]["name"] == "staging" and listing["total"] == 0
    assert (await client.post("/api/platform/db-configs/nope/activate")).status_code == 404
    event = await sub.next_msg(timeout=5)
    await sub.unsubscribe()
    assert json.loads(event.data)["db_config_id"] == created.json()["id"]
    configs = (await client.get("/api/platform/db-configs")).json()["dbConfigs"]
    assert [c["name"] for c in configs if c["active"]] == ["staging"]
    audit = (await client.get("/api/platform/audit")).json()["records"]
    assert [(r["action"], r["actor"]["email"]) for r in audit[:2]] == [
        ("dbconfig.activated", console.email),
        ("dbconfig.created", console.email),
    ]
    assert audit[-1]["action"] == "model.created" and audit[-1]["target"] == "openai/gpt-4o-2024-08-06"
    # only a hash of the session token is stored
    async with console.sessions() as s:
        hashes = (await s.execute(select(ConsoleSession.token_hash))).scalars().all()
    assert client.cookies["stockade_session"] not in hashes and len(hashes) == 1
