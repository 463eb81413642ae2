"""A service's background tasks, started by name and stopped together within a deadline.

A service's loops (sink workers, consumers, samplers, a file watcher) run as tasks beside its server. Each is
started with a name and, when it can finish cleanly, the call that asks it to (``stop``: set its stop event).
:meth:`Tasks.stop` asks every task to finish, waits for them at most ``grace_s``, then cancels the late ones and
those that cannot be asked (again and again for a second, :func:`stockade.runtime.shutdown.cancel_within`); a task
still running after that is abandoned and named in the log, so a stop never waits without a bound. A task that
ends by itself with an error is logged with its name when it ends, not at shutdown.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from stockade.runtime.shutdown import GRACE_S, cancel_within, where

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Running:
    task: asyncio.Task[Any]
    stop: Callable[[], object] | None


class Tasks:
    """The named background tasks of one service (``service``: the name its log lines carry)."""

    def __init__(self, *, service: str) -> None:
        self.service = service
        self._running: dict[asyncio.Task[Any], _Running] = {}
        self._stopping = False

    def start(
        self, name: str, work: Coroutine[Any, Any, object], *, stop: Callable[[], object] | None = None
    ) -> asyncio.Task[Any]:
        """Run ``work`` as the task ``name``. ``stop``: asks it to finish (then it has the grace of
        :meth:`stop`); without one it is cancelled when the tasks stop. Refused once the tasks are stopping."""
        if self._stopping:
            work.close()
            raise RuntimeError(f"{self.service}: not starting {name}, the background tasks are stopping")
        task = asyncio.create_task(work, name=name)
        self._running[task] = _Running(task, stop)
        task.add_done_callback(self._ended)
        return task

    @property
    def names(self) -> list[str]:
        """The tasks running now, by name."""
        return [task.get_name() for task in self._running]

    @property
    def stopping(self) -> bool:
        return self._stopping

    def _ended(self, task: asyncio.Task[Any]) -> None:
        self._running.pop(task, None)
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:
            log.error("%s: %s stopped: %s: %s", self.service, task.get_name(), type(error).__name__, error)
        elif not self._stopping:
            log.debug("%s: %s ended", self.service, task.get_name())

    async def stop(self, grace_s: float) -> list[str]:
        """Ask every task to finish, wait at most ``grace_s``, cancel the rest (at most a second more); the names
        of the tasks still running after that (abandoned, each logged with where it waits)."""
        self._stopping = True
        running = list(self._running.values())
        for entry in running:
            if entry.stop is None:
                entry.task.cancel()
            else:
                try:
                    entry.stop()
                except Exception as exc:  # asking failed: it is cancelled with the late ones
                    log.warning("%s: asking %s to stop failed: %s", self.service, entry.task.get_name(), exc)
        tasks = [entry.task for entry in running]
        if not tasks:
            return []
        _, late = await asyncio.wait(tasks, timeout=max(grace_s, 0.0))
        if late:
            log.warning(
                "%s: %s did not finish within %.1f s: cancelling",
                self.service,
                ", ".join(sorted(t.get_name() for t in late)),
                grace_s,
            )
        ends = await asyncio.gather(*(cancel_within(task, GRACE_S) for task in late))
        stuck = [task for task, ended in zip(late, ends, strict=True) if not ended]
        for task in stuck:
            log.error(
                "%s: %s would not stop; abandoned (waiting in %s)", self.service, task.get_name(), where(task)
            )
        for task in tasks:  # retrieved, so none is reported as "exception never retrieved"
            if task.done() and not task.cancelled():
                task.exception()
        return [task.get_name() for task in stuck]
