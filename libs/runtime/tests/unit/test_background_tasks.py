"""A service's background tasks (``stockade.runtime.background.Tasks``): asked to finish, then cancelled, never
waited for without a bound; a task that dies is named in the log when it dies."""

from __future__ import annotations

import asyncio
import logging

import pytest

from stockade.runtime.background import Tasks


class Loop:
    """A worker loop like the sink workers': runs until asked to stop, then finishes the batch in hand."""

    def __init__(self) -> None:
        self._stop = asyncio.Event()
        self.finished = False

    def stop(self) -> None:
        self._stop.set()

    async def run(self) -> None:
        await self._stop.wait()
        self.finished = True


async def test_tasks_asked_to_stop_finish_their_work_and_the_others_are_cancelled() -> None:
    tasks = Tasks(service="svc")
    loops = [Loop(), Loop()]
    for i, loop in enumerate(loops):
        tasks.start(f"worker-{i}", loop.run(), stop=loop.stop)
    sleeper = tasks.start("sampler", asyncio.sleep(3600))
    assert sorted(tasks.names) == ["sampler", "worker-0", "worker-1"]
    assert await tasks.stop(grace_s=5) == []
    assert all(loop.finished for loop in loops)
    assert sleeper.cancelled()
    assert tasks.names == []


async def test_a_task_that_ignores_the_request_is_cancelled_and_one_that_will_not_end_is_abandoned(
    caplog: pytest.LogCaptureFixture,
) -> None:
    tasks = Tasks(service="svc")
    deaf = tasks.start("deaf", asyncio.sleep(3600), stop=lambda: None)
    release = asyncio.Event()

    async def stubborn() -> None:
        while not release.is_set():
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                continue  # swallows every cancellation

    tasks.start("stubborn", stubborn(), stop=lambda: None)
    with caplog.at_level(logging.WARNING, logger="stockade.runtime.background"):
        abandoned = await tasks.stop(grace_s=0.05)
    assert deaf.cancelled()
    assert abandoned == ["stubborn"]
    assert "stubborn would not stop" in caplog.text
    release.set()


async def test_a_task_that_dies_is_logged_by_name_when_it_dies(caplog: pytest.LogCaptureFixture) -> None:
    tasks = Tasks(service="svc")

    async def broken() -> None:
        raise ConnectionError("the store went away")

    with caplog.at_level(logging.ERROR, logger="stockade.runtime.background"):
        task = tasks.start("audit-TRUST", broken())
        await asyncio.wait({task})
        await asyncio.sleep(0)  # the done callback runs on the next turn of the loop
    assert "svc: audit-TRUST stopped: ConnectionError: the store went away" in caplog.text
    assert tasks.names == []


async def test_nothing_new_starts_once_stopping() -> None:
    tasks = Tasks(service="svc")
    await tasks.stop(grace_s=1)
    work = asyncio.sleep(0)
    with pytest.raises(RuntimeError, match="stopping"):
        tasks.start("late", work)
