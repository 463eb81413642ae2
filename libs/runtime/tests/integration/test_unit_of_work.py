"""The unit of work against a real database (SQLite file, PostgreSQL): what it commits, what it rolls back, when
it wakes the relay, and the one retry of a lost unique-key race; last, a real relay and nats-server deliver an
event committed through it without waiting for their next poll."""

import asyncio
import time

import nats
import pytest
from sqlalchemy import String, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from stockade.contracts import ModelChanged
from stockade.contracts.subjects import MODEL_CHANGED
from stockade.runtime.db import create_engine, session_factory
from stockade.runtime.outbox import OutboxColumns, OutboxRelay, enqueue, given_connection
from stockade.runtime.settings import OutboxSettings
from stockade.runtime.uow import UnitOfWork


class Base(DeclarativeBase):
    pass


class Outbox(OutboxColumns, Base):
    __tablename__ = "uow_outbox"


class Item(Base):
    __tablename__ = "uow_item"

    name: Mapped[str] = mapped_column(String(50), primary_key=True)
    value: Mapped[str] = mapped_column(String(50))


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def sessions(request, tmp_path):
    if request.param == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp_path / 'uow.db'}"
    else:
        url = request.getfixturevalue("postgres_database")
    async for made in _sessions(url):
        yield made


@pytest.fixture
async def postgres_sessions(postgres_database):
    async for made in _sessions(postgres_database):
        yield made


async def _sessions(url: str):
    engine = create_engine(url)
    async with engine.begin() as conn:
        await conn.run_sync(Base.metadata.create_all)
    yield session_factory(engine)
    await engine.dispose()


class Relay:
    """The relay's ``wake()``, counted."""

    def __init__(self) -> None:
        self.woken = 0

    def wake(self) -> None:
        self.woken += 1


def changed(n: int) -> ModelChanged:
    return ModelChanged(db_config_id="cfg", provider="acme", model_id=f"m-{n}", change="created")


async def stored(sessions) -> tuple[dict[str, str], list[str]]:
    """The items and the outbox's event ids, as another session sees them."""
    async with sessions() as s:
        items = {i.name: i.value for i in (await s.execute(select(Item))).scalars()}
        events = list((await s.execute(select(Outbox.event_id))).scalars())
    return items, events


async def test_a_change_and_its_event_are_committed_together_then_the_relay_is_woken(sessions):
    relay = Relay()
    event = changed(1)
    async with sessions() as session:
        async with UnitOfWork(session, Outbox, relay) as uow:
            uow.session.add(Item(name="a", value="1"))
            uow.enqueue(event)
            assert relay.woken == 0  # not before the commit
        assert relay.woken == 1
        assert not session.in_transaction()  # the caller's session stays usable
    assert await stored(sessions) == ({"a": "1"}, [str(event.event_id)])


async def test_a_block_that_raises_leaves_neither_the_change_nor_its_event_and_wakes_nothing(sessions):
    relay = Relay()
    with pytest.raises(ValueError, match="refused"):
        async with UnitOfWork(sessions, Outbox, relay) as uow:
            uow.session.add(Item(name="a", value="1"))
            uow.enqueue(changed(1))
            await uow.session.flush()
            raise ValueError("refused")
    assert relay.woken == 0
    assert await stored(sessions) == ({}, [])


async def test_a_commit_without_an_event_does_not_wake_the_relay(sessions):
    relay = Relay()
    async with UnitOfWork(sessions, Outbox, relay) as uow:
        uow.session.add(Item(name="a", value="1"))
    assert relay.woken == 0
    assert await stored(sessions) == ({"a": "1"}, [])


async def test_an_event_enqueued_on_the_units_session_by_a_repository_wakes_the_relay(sessions):
    relay = Relay()
    async with UnitOfWork(sessions, Outbox, relay) as uow:
        enqueue(uow.session, Outbox, changed(1))  # what a repository that takes the session does
    assert relay.woken == 1
    assert len((await stored(sessions))[1]) == 1


async def test_a_session_already_in_a_transaction_is_refused(sessions):
    async with sessions() as session:
        await session.execute(select(Item))  # a read began a transaction
        with pytest.raises(Exception, match="already"):
            async with UnitOfWork(session, Outbox):
                pass


async def test_a_unit_without_an_outbox_table_refuses_an_event(sessions):
    with pytest.raises(RuntimeError, match="no outbox table"):
        async with UnitOfWork(sessions) as uow:
            uow.enqueue(changed(1))


@pytest.mark.postgres
async def test_a_lost_unique_key_race_runs_once_more_and_updates_what_the_winner_created(postgres_sessions):
    """PostgreSQL only: SQLite lets one writer at a time, so two transactions never race to create a key."""
    sessions = postgres_sessions
    relay = Relay()
    changes: list[str] = []
    attempts: list[int] = []

    async def work(uow: UnitOfWork) -> str:
        attempts.append(1)
        found = await uow.session.get(Item, "k")
        if len(attempts) == 1:  # another writer creates the key after this transaction looked for it
            async with sessions() as other, other.begin():
                other.add(Item(name="k", value="other"))
        if found is None:
            uow.session.add(Item(name="k", value="mine"))
            await uow.session.flush()  # the unique key: IntegrityError
            change = "created"
        else:
            found.value = "mine"
            change = "updated"
        changes.append(change)
        uow.enqueue(changed(len(changes)))
        return change

    assert await UnitOfWork(sessions, Outbox, relay).run(work, attempts=2) == "updated"
    assert (
        len(attempts) == 2 and changes == ["updated"] and relay.woken == 1
    )  # the lost attempt recorded nothing, woke nothing
    items, events = await stored(sessions)
    assert items == {"k": "mine"} and len(events) == 1


async def test_a_lost_race_with_one_attempt_is_the_callers_error(sessions):
    async with sessions() as s, s.begin():
        s.add(Item(name="k", value="other"))
    relay = Relay()

    async def work(uow: UnitOfWork) -> None:
        uow.session.add(Item(name="k", value="mine"))
        uow.enqueue(changed(1))

    with pytest.raises(IntegrityError):
        await UnitOfWork(sessions, Outbox, relay).run(work)
    assert relay.woken == 0
    assert await stored(sessions) == ({"k": "other"}, [])


@pytest.mark.nats
async def test_a_running_relay_sends_the_event_at_the_commit_not_at_its_next_poll(
    sessions, nats_server_factory
):
    server = nats_server_factory()
    nc = await nats.connect(server.url)
    relay = OutboxRelay(sessions, Outbox, given_connection(nc), OutboxSettings(interval_s=3600))
    relay.start()
    try:
        await asyncio.sleep(0.2)  # its first round found nothing; the next poll is an hour away
        async with UnitOfWork(sessions, Outbox, relay) as uow:
            uow.session.add(Item(name="a", value="1"))
            uow.enqueue(event := changed(1))
        deadline = time.monotonic() + 20
        while relay.sent < 1:
            assert time.monotonic() < deadline, "the event was not sent after the commit"
            await asyncio.sleep(0.05)
        js = nc.jetstream()
        assert (await js.stream_info("MODELS")).state.messages == 1
        sub = await js.subscribe(MODEL_CHANGED, ordered_consumer=True)
        msg = await sub.next_msg(timeout=10)
        assert msg.headers is not None and msg.headers.get("Nats-Msg-Id") == str(event.event_id)
    finally:
        await relay.stop()
        await nc.close()
