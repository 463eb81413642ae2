"""Runs kept after a failed flush: bounded, retried in the background with backoff, tried once more at exit.

:class:`PendingRuns` holds closed runs whose flush failed (a retryable failure: backend unreachable, timeouts,
429/5xx after the sink's own retries). It is bounded twice: at most ``max_pending_runs`` runs and
``max_pending_events`` events in all. Past a bound the oldest runs are dropped whole; a single run larger than
the event bound keeps its first events. Every drop is counted (:class:`PendingStats`) and logged, and a trimmed
run's ``dropped_events`` tells the backend how many it lost.

:class:`PendingRetrier` retries them in a daemon thread with its own event loop: first after
``retry_initial_s``, doubling (with jitter) up to ``retry_max_s`` while the backend keeps failing, back to the
start after a success. The thread holds the hook weakly and ends when nothing is pending (a later failure
starts it again) or when the hook is garbage collected.

At interpreter exit (``atexit``), every hook with runs still pending stops its retrier and sends them once
more, for at most ``exit_flush_timeout_s``; what is still unsent then is logged and lost.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import random
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from stockade.guardrails.storage.buffer import BufferedRun
from stockade.guardrails.storage.config import StorageConfig

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PendingStats:
    """Runs and events waiting for a retry, what the bounds dropped, and the background retrier's state."""

    runs: int
    events: int
    dropped_runs: int
    dropped_events: int
    retries: int  # background retry rounds so far
    next_retry_s: float | None  # delay before the next background round (None: no retry scheduled)


class PendingRuns:
    """Closed runs whose flush failed, oldest first, within ``max_pending_runs`` and ``max_pending_events``."""

    def __init__(self, config: StorageConfig) -> None:
        self.config = config
        self._runs: OrderedDict[str, BufferedRun] = OrderedDict()
        self._lock = threading.Lock()
        self.dropped_runs = 0
        self.dropped_events = 0

    def add(self, run: BufferedRun) -> None:
        """Keep ``run`` for a retry; drop the oldest runs (then this run's last events) past the bounds."""
        max_runs, max_events = self.config.max_pending_runs, self.config.max_pending_events
        runs_lost = events_lost = 0
        with self._lock:
            self._runs.pop(run.run_id, None)
            self._runs[run.run_id] = run
            total = sum(len(r.events) for r in self._runs.values())
            while len(self._runs) > max_runs or (total > max_events and len(self._runs) > 1):
                _, oldest = self._runs.popitem(last=False)
                total -= len(oldest.events)
                runs_lost += 1
                events_lost += len(oldest.events)
            if total > max_events:  # this run alone is over the bound
                cut = total - max_events
                run.events = run.events[:max_events]
                run.dropped += cut
                events_lost += cut
            self.dropped_runs += runs_lost
            self.dropped_events += events_lost
        if runs_lost or events_lost:
            log.warning(
                "guardrail storage: pending bound reached (%d runs, %d events), dropped %d runs and %d events",
                max_runs,
                max_events,
                runs_lost,
                events_lost,
            )

    def pop(self, run_id: str | None) -> BufferedRun | None:
        with self._lock:
            return self._runs.pop(run_id, None) if run_id else None

    def get(self, run_id: str) -> BufferedRun | None:
        with self._lock:
            return self._runs.get(run_id)

    def take_all(self) -> list[BufferedRun]:
        with self._lock:
            runs = list(self._runs.values())
            self._runs.clear()
            return runs

    def counts(self) -> dict[str, int]:
        with self._lock:
            return {rid: len(run.events) for rid, run in self._runs.items()}

    def __len__(self) -> int:
        with self._lock:
            return len(self._runs)


class _Retrying(Protocol):
    """What the retrier and the exit flush use of a storage hook."""

    config: StorageConfig
    pending: PendingRuns

    async def flush_pending(self) -> Sequence[Any]: ...


class PendingRetrier:
    """The background retry of one hook's pending runs (a daemon thread, started on demand)."""

    def __init__(self, hook: _Retrying) -> None:
        self._hook = weakref.ref(hook)
        self.config = hook.config
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.retries = 0
        self.delay_s: float | None = None

    def state(self) -> tuple[int, float | None]:
        """Rounds so far and the delay before the next one (None: none scheduled), read together."""
        with self._lock:
            return self.retries, self.delay_s

    def wake(self) -> None:
        """Make sure a retry is scheduled (a run was just kept after a failed flush)."""
        if not self.config.retry_pending:
            return
        with self._lock:
            if self._thread is not None or self._stop.is_set():
                return
            self.delay_s = self.config.retry_initial_s
            self._thread = threading.Thread(
                target=_retry_loop, args=(self._hook, self), name="stockade-storage-retry", daemon=True
            )
            self._thread.start()

    def stop(self, timeout_s: float) -> None:
        """Stop retrying; wait up to ``timeout_s`` for a round in progress to finish."""
        self._stop.set()
        with self._lock:
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=max(0.0, timeout_s))

    def _next_wait(self) -> float | None:
        """The jittered wait before the next round, or None when the thread should end."""
        with self._lock:
            hook = self._hook()
            if self._stop.is_set() or hook is None or len(hook.pending) == 0:
                self._thread, self.delay_s = None, None
                return None
            delay = self.delay_s or self.config.retry_initial_s
            return delay * random.uniform(0.8, 1.2)

    def _after_round(self, failed: bool) -> None:
        with self._lock:
            self.retries += 1
            base = self.delay_s or self.config.retry_initial_s
            self.delay_s = min(base * 2, self.config.retry_max_s) if failed else self.config.retry_initial_s


def _retry_loop(ref: Callable[[], _Retrying | None], retrier: PendingRetrier) -> None:
    while (wait := retrier._next_wait()) is not None:
        if retrier._stop.wait(wait):
            continue  # stopped: _next_wait() ends the thread
        hook = ref()
        if hook is None:
            continue
        try:
            results = asyncio.run(hook.flush_pending())
            failed = any(not getattr(r, "ok", True) for r in results) or len(hook.pending) > 0
        except Exception:  # never let the thread die with runs still pending
            log.exception("guardrail storage: background retry failed")
            failed = True
        del hook
        retrier._after_round(failed)


# -- one more try at interpreter exit -------------------------------------------------------------------------
_exit_hooks: weakref.WeakSet[Any] = weakref.WeakSet()
_exit_lock = threading.Lock()


def flush_at_exit(hook: _Retrying, retrier: PendingRetrier | None) -> None:
    """Stop the retrier and send the hook's pending runs once more, for at most exit_flush_timeout_s."""
    budget = hook.config.exit_flush_timeout_s
    if budget <= 0 or len(hook.pending) == 0:
        return
    deadline = time.monotonic() + budget
    if retrier is not None:
        retrier.stop(budget / 2)  # a round in progress may finish the job

    async def bounded() -> None:
        await asyncio.wait_for(hook.flush_pending(), max(0.0, deadline - time.monotonic()))

    if len(hook.pending):
        try:
            asyncio.run(bounded())
        except (TimeoutError, RuntimeError) as exc:
            log.error("guardrail storage: flush at exit stopped: %s", type(exc).__name__)
    left = hook.pending.counts()
    if left:
        log.error(
            "guardrail storage: %d runs (%d events) still unsent at exit, lost",
            len(left),
            sum(left.values()),
        )


def register_for_exit(hook: Any) -> None:
    """Flush ``hook``'s pending runs at interpreter exit (held weakly)."""
    with _exit_lock:
        _exit_hooks.add(hook)


@atexit.register
def _flush_all_at_exit() -> None:
    with _exit_lock:
        hooks = list(_exit_hooks)
    for hook in hooks:
        hook.flush_at_exit()
