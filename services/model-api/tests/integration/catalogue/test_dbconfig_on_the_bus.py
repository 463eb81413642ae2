"""Activating a database configuration reaches the bus with the store it names, and model-api answers
``dbconfig.cmd.active.v1`` with the active one (what guardrail-ingest follows and asks at start-up)."""

import asyncio
import json

import pytest

from stockade.contracts import ActiveDbConfig, DbConfigActivated, subjects
from stockade.contracts.nats_sync import sync_with_server

pytestmark = [pytest.mark.postgres, pytest.mark.nats]


async def ask(nats_client) -> ActiveDbConfig:
    reply = await nats_client.request(subjects.DBCONFIG_CMD_ACTIVE, b"{}", timeout=5)
    return ActiveDbConfig.model_validate_json(reply.data)


async def test_activation_publishes_the_store_and_the_request_answers_it(
    client, console, nats_client, unique_name
):
    await console.make_platform_admin()
    # The first answer on an empty database is the default configuration, as the console shows it.
    shown = {c["id"]: c for c in (await client.get("/api/platform/db-configs")).json()["dbConfigs"]}
    first = await ask(nats_client)
    assert shown[first.db_config_id]["dbType"] == first.db_type and shown[first.db_config_id]["active"]

    name = unique_name("mongo")
    created = await client.post("/api/platform/db-configs", json={"name": name, "db_type": "mongodb"})
    assert created.status_code == 201, created.text
    config_id = created.json()["id"]

    events = await nats_client.subscribe(subjects.DBCONFIG_ACTIVATED)
    await sync_with_server(nats_client)
    activated = await client.post(f"/api/platform/db-configs/{config_id}/activate")
    assert activated.status_code == 200, activated.text

    async def our_event() -> dict:
        while True:  # the NATS server is shared with other tests: skip their activations
            msg = await events.next_msg(timeout=10)
            body = json.loads(msg.data)
            if body["db_config_id"] == config_id:
                return {"body": body, "headers": msg.headers}

    got = await asyncio.wait_for(our_event(), timeout=15)
    await events.unsubscribe()
    event = DbConfigActivated.model_validate(got["body"])
    assert (event.db_type, event.name) == ("mongodb", name)
    assert event.activated_at is not None and event.schema_version == 1
    assert got["headers"]["Nats-Msg-Id"] == str(event.event_id)

    now = await ask(nats_client)
    assert (now.db_config_id, now.db_type, now.name) == (config_id, "mongodb", name)
    assert now.activated_at == event.activated_at
