"""Events go into the outbox in the change's transaction and reach JetStream once NATS answers."""

import json

import pytest
from sqlalchemy import select

from stockade.contracts import subjects
from stockade.contracts.nats_sync import sync_with_server
from stockade.model_api.catalogue import actions, dbconfigs
from stockade.model_api.catalogue import models as catalogue
from stockade.model_api.catalogue.schemas import ModelIn
from stockade.model_api.migrate import upgrade_async
from stockade.model_api.settings import OutboxSettings
from stockade.model_api.tables import OutboxEvent
from stockade.runtime.db import create_engine, session_factory
from stockade.runtime.outbox import OutboxRelay, given_connection


@pytest.fixture
async def sessions(postgres_database):
    await upgrade_async(postgres_database)
    engine = create_engine(postgres_database)
    yield session_factory(engine)
    await engine.dispose()


async def test_events_wait_in_the_outbox_while_nats_is_away_then_are_sent_once(sessions, nats_client):
    async with sessions() as s:
        model = ModelIn.model_validate({"model_id": "m-1", "displayName": "M", "modelType": "embedding"})
        await actions.save_model(s, None, "acme", model, actor="u1")
        await actions.remove_model(s, None, "acme", "m-1", actor="u1")

    offline = OutboxRelay(sessions, OutboxEvent, given_connection(None), OutboxSettings())
    with pytest.raises(ConnectionError):
        await offline.flush()
    async with sessions() as s:
        rows = (await s.execute(select(OutboxEvent).order_by(OutboxEvent.created_at))).scalars().all()
        assert [json.loads(r.payload)["change"] for r in rows] == ["created", "deleted"]
        assert all(r.sent_at is None for r in rows)

    sub = await nats_client.subscribe(subjects.MODEL_CHANGED)
    await sync_with_server(nats_client)
    online = OutboxRelay(sessions, OutboxEvent, given_connection(nats_client), OutboxSettings())
    assert await online.flush() == 2
    assert await online.flush() == 0  # nothing is sent twice
    got = [await sub.next_msg(timeout=5) for _ in range(2)]
    await sub.unsubscribe()
    assert [json.loads(m.data)["change"] for m in got] == ["created", "deleted"]
    assert [m.headers["Nats-Msg-Id"] for m in got] == [r.event_id for r in rows]
    async with sessions() as s:
        assert all(r.sent_at is not None for r in (await s.execute(select(OutboxEvent))).scalars())
    stored = await nats_client.jetstream().get_last_msg(
        subjects.stream_for(subjects.MODEL_CHANGED), subjects.MODEL_CHANGED
    )
    assert json.loads(stored.data)["event_id"] == rows[-1].event_id


async def test_activation_records_an_event_only_when_the_active_configuration_changes(sessions):
    from stockade.model_api.catalogue.schemas import DbConfigCreate

    async with sessions() as s:
        default = await dbconfigs.active_config(s)
        await s.commit()
        other = await actions.create_config(
            s, None, DbConfigCreate(name="other", db_type="dynamodb"), actor="u1"
        )
        await actions.activate(s, None, default.id, actor="u1")  # already active: no event
        await actions.activate(s, None, other.id, actor="u1")
        rows = (await s.execute(select(OutboxEvent))).scalars().all()
        assert [json.loads(r.payload)["db_config_id"] for r in rows] == [other.id]
        assert json.loads(rows[0].payload)["name"] == "other"


async def test_the_change_and_its_event_commit_together(sessions):
    """A change whose transaction fails leaves neither the change nor its event."""
    async with sessions() as s:
        first = ModelIn.model_validate({"model_id": "m-2", "displayName": "M", "modelType": "chat"})
        await actions.save_model(s, None, "acme", first, actor="u1")
        bad = first.model_copy(update={"display_name": "x" * 201})  # longer than the column: the flush fails
        with pytest.raises(Exception, match="value too long"):
            await actions.save_model(s, None, "acme", bad, actor="u1")
        rows = (await s.execute(select(OutboxEvent))).scalars().all()
        assert [json.loads(r.payload)["change"] for r in rows] == ["created"]
        config = await dbconfigs.active_config(s)
        kept = await catalogue.get_model(s, config.id, "acme", "m-2")
        assert kept.display_name == "M"


async def test_a_revoked_ingest_keys_event_names_its_project(sessions):
    """The audit trail files a revocation under the event's project: an ingest key's, none for a user's key."""
    from stockade import identity

    async with sessions() as s:
        await identity.create_organisation(s, "acme")
        user = await identity.create_user(s, "dev@example.com")
        project = await identity.create_project(s, "acme", "agents")
        await identity.add_project_member(s, project.id, user.email)
        ingest = await identity.create_api_key(s, user.id, scope="ingest", project=project.id)
        personal = await identity.create_api_key(s, user.id, scope="write")
        await s.commit()
        await actions.revoke_own_key(s, None, user.id, ingest.id)
        await actions.revoke_own_key(s, None, user.id, personal.id)
        rows = (await s.execute(select(OutboxEvent))).scalars().all()
    events = [json.loads(r.payload) for r in rows if r.subject == subjects.APIKEY_REVOKED]
    assert {e["key_id"]: e["project_id"] for e in events} == {ingest.id: project.id, personal.id: None}
