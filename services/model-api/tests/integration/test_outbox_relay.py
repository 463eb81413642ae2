"""Events go into the outbox in the change's transaction and reach JetStream once NATS answers."""

import json

import pytest
from sqlalchemy import select

from stockade.contracts import ModelChanged, subjects
from stockade.model_api import catalogue, dbconfigs
from stockade.model_api.events import OutboxRelay
from stockade.model_api.migrate import upgrade_async
from stockade.model_api.schemas import ModelIn
from stockade.model_api.settings import OutboxSettings
from stockade.model_api.tables import OutboxEvent
from stockade.runtime import create_engine, session_factory


@pytest.fixture
async def sessions(postgres_database):
    await upgrade_async(postgres_database)
    engine = create_engine(postgres_database)
    yield session_factory(engine)
    await engine.dispose()


async def test_events_wait_in_the_outbox_while_nats_is_away_then_are_sent_once(sessions, nats_client):
    async with sessions() as s:
        config = await dbconfigs.active_config(s)
        model = ModelIn.model_validate({"model_id": "m-1", "displayName": "M", "modelType": "embedding"})

        def event(change):
            return ModelChanged(db_config_id=config.id, provider="acme", model_id="m-1", change=change)

        await catalogue.upsert_model(s, config.id, "acme", model, event_for=event)
        await catalogue.delete_model(s, config.id, "acme", "m-1", event_for=event)

    offline = OutboxRelay(sessions, None, OutboxSettings())
    with pytest.raises(ConnectionError):
        await offline.flush()
    async with sessions() as s:
        rows = (await s.execute(select(OutboxEvent).order_by(OutboxEvent.created_at))).scalars().all()
        assert [json.loads(r.payload)["change"] for r in rows] == ["created", "deleted"]
        assert all(r.sent_at is None for r in rows)

    sub = await nats_client.subscribe(subjects.MODEL_CHANGED)
    await nats_client.flush()
    online = OutboxRelay(sessions, nats_client, OutboxSettings())
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
    from stockade.contracts import DbConfigActivated
    from stockade.model_api.schemas import DbConfigCreate

    async with sessions() as s:
        default = await dbconfigs.active_config(s)
        other = await dbconfigs.create_config(s, DbConfigCreate(name="other", db_type="dynamodb"))

        def event(config):
            return DbConfigActivated(db_config_id=config.id, db_type=config.db_type.value)

        await dbconfigs.activate_config(s, default.id, event_for=event)  # already active: no event
        await dbconfigs.activate_config(s, other.id, event_for=event)
        rows = (await s.execute(select(OutboxEvent))).scalars().all()
        assert [json.loads(r.payload)["db_config_id"] for r in rows] == [other.id]
