"""One unit of work: one transaction on one session, the outbox rows it enqueues, and the relay woken after it
commits. Every write of the platform goes through it::

    async with UnitOfWork(session, OutboxEvent, relay) as uow:
        saved = await catalogue.upsert_model(uow.session, ...)  # repositories take the session, never commit
        uow.enqueue(ModelChanged(...))  # the event, in the same transaction
    # committed here (rolled back if the block raised); then the relay is woken, if an event was enqueued

The rules:

* The unit owns the transaction: it begins it, commits it once when the block returns and rolls it back when the
  block raises. What it calls (repositories, ``stockade.identity``) takes the session and never commits.
* An event is written to the outbox in the same transaction as the change it reports (:meth:`UnitOfWork.enqueue`,
  or :func:`stockade.runtime.outbox.enqueue` on the unit's session), so both are committed or neither is.
* The relay is woken after the commit, and only when the transaction enqueued an event: it sends at once rather
  than at its next poll, and never before the row is visible to it.
* :meth:`UnitOfWork.run` with ``attempts=2``: a transaction that lost a race to create the same unique key
  (``IntegrityError``) runs once more, and then finds the row the other one created.

Given a session, the unit uses it and leaves it open; the session must not be in a transaction when the unit
starts (a request's session ends its read first). Given a session factory, the unit opens a session of its own
and closes it at the end.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Protocol, TypeVar

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, AsyncSessionTransaction, async_sessionmaker

from stockade.contracts import EventEnvelope
from stockade.runtime.outbox import ENQUEUED, OutboxColumns, enqueue

T = TypeVar("T")


class Waker(Protocol):
    """What the unit needs of the relay (:class:`~stockade.runtime.outbox.OutboxRelay`): ``wake()``."""

    def wake(self) -> None: ...


class UnitOfWork:
    """A transaction with its outbox and relay: ``async with UnitOfWork(session, table, relay) as uow: ...``."""

    def __init__(
        self,
        session: AsyncSession | async_sessionmaker[AsyncSession],
        outbox: type[OutboxColumns] | None = None,
        relay: Waker | None = None,
    ) -> None:
        """``outbox``: the service's outbox table (None: this unit records no event); ``relay``: woken after a
        commit that enqueued an event (None: the relay polls, or none runs in this process)."""
        self._given = session if isinstance(session, AsyncSession) else None
        self._sessions = None if isinstance(session, AsyncSession) else session
        self._outbox = outbox
        self._relay = relay
        self._session: AsyncSession | None = None
        self._transaction: AsyncSessionTransaction | None = None

    @property
    def session(self) -> AsyncSession:
        """The session of the transaction (only inside ``async with``)."""
        if self._session is None or self._transaction is None:
            raise RuntimeError("the unit of work is not open: use it in `async with`")
        return self._session

    def enqueue(self, event: EventEnvelope) -> None:
        """Record ``event`` in the outbox, in this transaction; the relay sends it after the commit."""
        if self._outbox is None:
            raise RuntimeError("this unit of work has no outbox table")
        enqueue(self.session, self._outbox, event)

    async def __aenter__(self) -> UnitOfWork:
        if self._transaction is not None:
            raise RuntimeError("the unit of work is open already")
        session = self._given if self._given is not None else self._sessions()  # type: ignore[misc]
        session.info.pop(ENQUEUED, None)
        transaction = session.begin()  # raises when the session is in a transaction already
        try:
            await transaction.__aenter__()
        except BaseException:
            if self._given is None:
                await session.close()
            raise
        self._session, self._transaction = session, transaction
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        session, transaction = self.session, self._transaction
        assert transaction is not None
        self._session, self._transaction = None, None
        committed = False
        try:
            await transaction.__aexit__(exc_type, exc, tb)  # commits, or rolls back if the block raised
            committed = exc_type is None
        finally:
            enqueued = bool(session.info.pop(ENQUEUED, False))
            if self._given is None:
                await session.close()
        if committed and enqueued and self._relay is not None:
            self._relay.wake()

    async def run(self, work: Callable[[UnitOfWork], Awaitable[T]], *, attempts: int = 1) -> T:
        """``work(self)`` in one transaction: committed if it returns, rolled back if it raises. With
        ``attempts=2`` a transaction that lost a race to create the same unique key runs once more."""
        for attempt in range(1, attempts + 1):
            try:
                async with self:
                    return await work(self)
            except IntegrityError:
                if attempt == attempts:
                    raise
        raise AssertionError("unreachable")
