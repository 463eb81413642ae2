"""Shutdown in bounded time: one deadline for a service's whole stop, each step cancelled and abandoned past it.

A service stops in steps (the background NATS connect, the outbox relay, the hot-read pool, the bus, the
database engine). Any of them can wait forever in some state: a driver that swallows a cancellation, Python 3.11's
``asyncio.wait_for`` returning a result instead of raising when the cancellation and the inner result race, a
pool waiting for a connection that is never released, a server that stops answering mid-drain. So no step is
awaited unbounded:

- :class:`ShutdownDeadline` gives the whole stop one budget (``ServiceSettings.shutdown_timeout_s``); each step
  gets what is left of it (or its own smaller budget) and its clock starts with the first step.
- :func:`finish_within` runs one step as a task; past its budget the task is cancelled, and cancelled again every
  50 ms for a short grace (a cancellation swallowed once is not swallowed every time); a step still running then
  is *abandoned*: logged by name with where it was waiting, and shutdown goes on without it.
- :func:`cancel_leftovers` does the same for every task still alive when the server has stopped, so that
  ``asyncio.run`` (which cancels the rest and waits for them without a bound) has nothing left to wait for.
"""

from __future__ import annotations

import asyncio
import io
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

log = logging.getLogger(__name__)

GRACE_S = 1.0
_RECANCEL_EVERY_S = 0.05


def where(task: asyncio.Task[Any]) -> str:
    """The innermost frames a task is suspended in, one line (for the log line that names an abandoned step)."""
    out = io.StringIO()
    task.print_stack(limit=3, file=out)
    frames = [line.strip() for line in out.getvalue().splitlines() if line.strip().startswith("File ")]
    return " <- ".join(reversed(frames)) or "no frame"


async def cancel_within(task: asyncio.Task[Any], timeout_s: float) -> bool:
    """Cancel ``task`` and wait at most ``timeout_s`` for it to end, cancelling again every 50 ms; True if it ended."""
    deadline = time.monotonic() + max(timeout_s, 0.0)
    while not task.done():
        task.cancel()
        left = deadline - time.monotonic()
        if left <= 0:
            break
        await asyncio.wait({task}, timeout=min(_RECANCEL_EVERY_S, left))
    if task.done() and not task.cancelled():
        task.exception()  # retrieved: no "exception was never retrieved" at garbage collection
    return task.done()


async def finish_within(
    step: Awaitable[Any], what: str, timeout_s: float, *, grace_s: float = GRACE_S, service: str = "stockade"
) -> bool:
    """Await ``step`` for at most ``timeout_s`` (then cancel, grace ``grace_s``, abandon); True if it completed.

    A step that raises is logged and counts as done: shutdown goes on with the next one either way."""
    task = asyncio.ensure_future(step)
    try:
        await asyncio.wait({task}, timeout=max(timeout_s, 0.0))
    except asyncio.CancelledError:  # the stop itself was cancelled: take the step down with it, bounded
        await cancel_within(task, grace_s)
        raise
    if task.done():
        if not task.cancelled() and (exc := task.exception()) is not None:
            log.warning("%s: %s failed while stopping: %s: %s", service, what, type(exc).__name__, exc)
        return True
    stack = where(task)
    ended = await cancel_within(task, grace_s)
    log.error(
        "%s: %s did not stop within %.1f s; %s (it was waiting in %s)",
        service,
        what,
        timeout_s,
        "cancelled it" if ended else "abandoned it, still running",
        stack,
    )
    return False


class ShutdownDeadline:
    """One budget for a whole stop; :meth:`step` runs each part within what is left of it.

    The clock starts at the first step, so the object can be made (and its steps registered on an exit stack)
    at startup. ``abandoned`` names the steps that did not finish in time, in order."""

    def __init__(self, budget_s: float, *, service: str, grace_s: float = GRACE_S) -> None:
        self.budget_s = budget_s
        self.service = service
        self.grace_s = grace_s
        self.abandoned: list[str] = []
        self._deadline: float | None = None

    def left(self) -> float:
        if self._deadline is None:
            self._deadline = time.monotonic() + self.budget_s
        return max(self._deadline - time.monotonic(), 0.0)

    async def step(
        self,
        what: str,
        fn: Callable[..., Awaitable[Any]],
        *args: Any,
        at_most_s: float | None = None,
    ) -> None:
        """``await fn(*args)`` within ``at_most_s`` (if given) and what is left of the budget."""
        budget = self.left() if at_most_s is None else min(at_most_s, self.left())
        if not await finish_within(fn(*args), what, budget, grace_s=self.grace_s, service=self.service):
            self.abandoned.append(what)


async def cancel_leftovers(timeout_s: float, *, service: str = "stockade") -> list[str]:
    """Cancel every other task of the running loop and wait at most ``timeout_s``; the names of those that would
    not end (logged with where they wait). Run it last, once the server and the lifespan have stopped."""
    current = asyncio.current_task()
    tasks = [t for t in asyncio.all_tasks() if t is not current and not t.done()]
    return await _cancel_all(tasks, timeout_s, service)


async def _cancel_all(tasks: Iterable[asyncio.Task[Any]], timeout_s: float, service: str) -> list[str]:
    pending = list(tasks)
    if not pending:
        return []
    ends = await asyncio.gather(*(cancel_within(t, timeout_s) for t in pending))
    stuck = [t for t, ended in zip(pending, ends, strict=True) if not ended]
    for task in stuck:
        log.error(
            "%s: task %s would not stop; abandoned (waiting in %s)", service, task.get_name(), where(task)
        )
    return [t.get_name() for t in stuck]
