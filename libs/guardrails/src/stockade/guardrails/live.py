"""The configuration a :class:`~stockade.guardrails.system.GuardrailSystem` runs on, and what happens to the one a
swap replaces (:meth:`~stockade.guardrails.system.GuardrailSystem.adopt`): its checks are closed (their pooled
connections released) once the checks already running on it have finished, or after a bounded wait. A check is
never made to wait for a close, and a close that fails or hangs is logged, not raised."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from stockade.contracts.policy import PolicyRef
from stockade.guardrails.checks.base import Closes, ContentCheck
from stockade.guardrails.checks.registry import CheckSlot
from stockade.guardrails.config import GuardrailsConfig

log = logging.getLogger("stockade.guardrails.platform")

RETIRE_AFTER_S = (
    60.0  # the longest a replaced version waits for its running checks before it is closed anyway
)
CLOSE_TIMEOUT_S = 10.0  # one check's aclose()


class Runs:
    """How many checks run on one configuration now; thread-safe (checks run on the agent's loops, swaps on the
    push thread). Once retired (``when_idle``) it admits no new check: ``enter`` says False, and the caller
    reads the system's configuration again. ``when_idle``'s callback runs once no check runs on it any more."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0
        self._retired = False
        self._on_idle: Callable[[], None] | None = None

    def enter(self) -> bool:
        with self._lock:
            if self._retired:
                return False
            self._count += 1
            return True

    def exit(self) -> None:
        with self._lock:
            self._count -= 1
            idle, self._on_idle = (self._on_idle, None) if self._count == 0 else (None, self._on_idle)
        if idle is not None:
            idle()

    def when_idle(self, callback: Callable[[], None]) -> None:
        with self._lock:
            self._retired = True
            if self._count:
                self._on_idle = callback
                return
        callback()


@dataclass(frozen=True)
class Live:
    """The configuration a system runs on and the checks built from it, swapped as one."""

    config: GuardrailsConfig
    slots: list[CheckSlot]
    ref: PolicyRef | None = None  # the platform policy version the configuration is
    runs: Runs = field(default_factory=Runs, compare=False)


def entered(current: Callable[[], Live]) -> Live:
    """``current()``, counted as running one more check; one a swap retired between the read and the count is
    read again (the new one), so a check never starts on a version whose close has begun."""
    live = current()
    while not live.runs.enter():
        live = current()
    return live


async def close_checks(checks: list[ContentCheck]) -> None:
    """``aclose()`` every check that has one, each bounded; a failure is logged and the others still close."""
    for check in checks:
        if not isinstance(check, Closes):
            continue
        name = getattr(check, "name", check)
        try:
            await asyncio.wait_for(check.aclose(), CLOSE_TIMEOUT_S)
        except Exception as exc:
            log.error("closing check %r of a replaced version failed: %s", name, exc)
        except (
            asyncio.CancelledError
        ):  # its loop is ending (the asyncio.run of a _sync call): said, not hidden
            log.error("closing check %r of a replaced version was cancelled: its loop ended", name)
            raise


class Retirements:
    """The replaced versions of one system whose checks are not closed yet."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[int, list[ContentCheck]] = {}
        self._tasks: set[object] = set()  # closes under way (a task is only weakly held by its loop)
        self.loop: asyncio.AbstractEventLoop | None = None  # the loop checks last ran on (their pools' loop)

    def retire(self, old: Live, kept: list[CheckSlot], after_s: float = RETIRE_AFTER_S) -> None:
        """Close ``old``'s checks (but those in ``kept``) once no check runs on it, or after ``after_s``."""
        keep = {id(slot.check) for slot in kept}
        checks: list[ContentCheck] = [
            s.check for s in old.slots if id(s.check) not in keep and isinstance(s.check, Closes)
        ]
        if not checks:
            return
        with self._lock:
            self._pending[id(checks)] = checks
        timer = threading.Timer(after_s, self._close, (checks, f"checks still ran on it after {after_s:g} s"))
        timer.daemon = True
        timer.start()

        def idle() -> None:
            timer.cancel()
            self._close(checks, None)

        old.runs.when_idle(idle)

    def take(self) -> list[ContentCheck]:
        """Every check not closed yet (``aclose()`` closes them itself)."""
        with self._lock:
            pending, self._pending = self._pending, {}
        return [check for checks in pending.values() for check in checks]

    def _close(self, checks: list[ContentCheck], why: str | None) -> None:
        with self._lock:
            if self._pending.pop(id(checks), None) is None:
                return  # closed already
        if why is not None:
            log.warning("closing the checks of a replaced version: %s", why)
        try:
            here = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        if here is not None:  # the end of the last check on it: a task, the check does not wait for it
            task = here.create_task(close_checks(checks))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        elif self.loop is not None and self.loop.is_running():  # on the loop that opened their pools
            future = asyncio.run_coroutine_threadsafe(close_checks(checks), self.loop)
            self._tasks.add(future)
            future.add_done_callback(self._tasks.discard)
        else:  # no loop runs checks now (the _sync twins' loops end with their call): a loop of its own
            asyncio.run(close_checks(checks))
