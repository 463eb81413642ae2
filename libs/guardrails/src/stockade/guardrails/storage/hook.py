"""GuardrailsStorageHook (spec 1, 3, 6): an in-memory, per-run buffer of guardrail events.

Lifecycle: ``begin_run()`` opens a run; every event recorded while it is open goes into its buffer (at most
``max_buffer`` events, later ones are counted as dropped); ``end_run()`` closes it and flushes the buffer through
:class:`~stockade.guardrails.storage.sink.BackendGuardrailSink`. A flush that fails keeps the events, so a later
``end_run(run_id)`` or ``flush_pending()`` sends them again (the backend dedupes on ``event_id``). Kept runs are
bounded, retried in the background with backoff and tried once more at exit (see
:mod:`~stockade.guardrails.storage.pending`).

Objects registered with :meth:`GuardrailsStorageHook.add_run_listener` (held weakly) hear of every run opened
and closed: the policy engines' token budgets keep per-run totals for exactly the open runs.

Which run an event belongs to: the run named by the event's ``run_id`` if it is open; else the run opened in
the current context (``begin_run()`` sets a context variable, so asyncio tasks started afterwards inherit it);
else the only open run. Events that match no run are counted in ``unrouted`` and not kept.
"""

from __future__ import annotations

import logging
import threading
import uuid
import weakref
from collections.abc import Mapping
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

from stockade.contracts.ingest_wire import RunInfo
from stockade.contracts.policy import PolicyRef
from stockade.guardrails.events import GuardrailEvent
from stockade.guardrails.storage.buffer import BufferedRun, RunListener, stamped
from stockade.guardrails.storage.config import StorageConfig
from stockade.guardrails.storage.context import RunLinks
from stockade.guardrails.storage.pending import (
    PendingRetrier,
    PendingRuns,
    PendingStats,
    flush_at_exit,
    register_for_exit,
)
from stockade.guardrails.storage.result import FlushResult, FlushStatus
from stockade.guardrails.storage.sink import BackendGuardrailSink

log = logging.getLogger(__name__)


class GuardrailsStorageHook:
    """Implements :class:`~stockade.guardrails.events.EventRecorder`; one per GuardrailSystem (shareable)."""

    def __init__(
        self,
        config: StorageConfig | None = None,
        *,
        sink: BackendGuardrailSink | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.config = config or StorageConfig()
        self.sink = sink or BackendGuardrailSink(self.config, environ=environ)
        self._links = RunLinks.from_env(environ)
        self._staged: RunLinks | None = None
        self._open: dict[str, BufferedRun] = {}
        self.pending = PendingRuns(self.config)  # closed runs whose flush failed
        self._retrier = PendingRetrier(self)
        self._current: ContextVar[str | None] = ContextVar(f"stockade_run_{id(self)}", default=None)
        self._lock = threading.Lock()
        self._listeners: weakref.WeakSet[RunListener] = weakref.WeakSet()
        self.unrouted = 0
        self.policy_ref: PolicyRef | None = None  # stamped on every event kept (GuardrailSystem.policy_ref)

    @property
    def enabled(self) -> bool:
        return self.config.enabled

    # -- correlation --------------------------------------------------------------------------------------
    def link_arms(
        self,
        project_id: str | None = None,
        *,
        agent_id: str | None = None,
        environment: str | None = None,
        prompt_name: str | None = None,
        prompt_version: str | int | None = None,
        labels: Mapping[str, Any] | None = None,
    ) -> RunLinks:
        """Process-wide links to the platform (project, agent, prompt); every later run carries them."""
        with self._lock:
            self._links = self._links.merged(
                labels,
                project_id=project_id,
                agent_id=agent_id,
                environment=environment,
                prompt_name=prompt_name,
                prompt_version=None if prompt_version is None else str(prompt_version),
            )
            return self._links

    def link_run_context(
        self,
        *,
        correlation_id: str | None = None,
        labels: Mapping[str, Any] | None = None,
        **links: str | None,
    ) -> RunLinks:
        """Links of one run: the run open in this context, else the next begin_run(). Overrides link_arms()."""
        with self._lock:
            run = self._open.get(self._current.get() or "")
            if run is not None:
                run.links = run.links.merged(labels, correlation_id=correlation_id, **links)
                return run.links
            base = self._staged or RunLinks()
            self._staged = base.merged(labels, correlation_id=correlation_id, **links)
            return self._staged

    # -- lifecycle ----------------------------------------------------------------------------------------
    def add_run_listener(self, listener: RunListener) -> None:
        """Tell ``listener`` of every run opened and closed from now on (held weakly)."""
        self._listeners.add(listener)

    def begin_run(self, run_id: str | None = None, *, labels: Mapping[str, Any] | None = None) -> str:
        """Open a run (a fresh UUID unless ``run_id`` is given) and make it current in this context."""
        run_id = run_id or str(uuid.uuid4())
        RunInfo(run_id=run_id)  # validates the id before anything is buffered under it
        with self._lock:
            if run_id in self._open:
                raise ValueError(f"run {run_id!r} is already open")
            links = self._links
            if self._staged is not None:
                staged = {
                    k: v for k, v in self._staged.as_fields().items() if k != "labels" and v is not None
                }
                links = links.merged(self._staged.labels, **staged)
                self._staged = None
            if labels:
                links = links.merged(labels)
            self._open[run_id] = BufferedRun(run_id, links, datetime.now(UTC))
        self._current.set(run_id)
        for listener in list(self._listeners):
            listener.run_began(run_id)
        return run_id

    def record(self, event: GuardrailEvent) -> None:
        """Buffer ``event`` in its run (EventRecorder). Never raises; disabled storage keeps nothing."""
        if not self.config.enabled:
            return
        with self._lock:
            run = self._route(event)
            if run is None:
                self.unrouted += 1
                return
            if len(run.events) >= self.config.max_buffer:
                run.dropped += 1
                if run.dropped == 1:
                    log.warning(
                        "guardrail run %s: buffer full (%d), dropping events", run.run_id, len(run.events)
                    )
                return
            run.events.append(stamped(event, run.run_id, self.policy_ref))

    async def end_run(self, run_id: str | None = None) -> FlushResult:
        """Close the run (default: the current one) and flush it; a failed flush keeps the events.

        Calling it again for a run whose flush failed retries that flush.
        """
        run_id = run_id or self._current.get()
        with self._lock:
            run = self._open.pop(run_id, None) if run_id else None
            if run is None:
                run = self.pending.pop(run_id)
            if run is None and run_id is None and len(self._open) == 1:
                run = self._open.pop(next(iter(self._open)))
            if run is None:
                raise ValueError(f"no open run {run_id!r}" if run_id else "no run is open: call begin_run()")
            if run.ended_at is None:
                run.ended_at = datetime.now(UTC)
        if self._current.get() == run.run_id:
            self._current.set(None)
        for listener in list(self._listeners):
            listener.run_ended(run.run_id)
        return await self._flush(run)

    async def checkpoint(self, run_id: str | None = None) -> FlushResult:
        """Send what an open run buffered so far and keep the run open (long runs, or before max_buffer).

        Sent events leave the buffer; on failure they stay and go out with the next checkpoint or end_run().
        """
        rid = run_id or self._current.get() or ""
        with self._lock:
            run = self._open.get(rid)
            if run is None:
                raise ValueError(f"no open run {rid!r}" if rid else "no run is open: call begin_run()")
            snapshot = list(run.events)
            info = run.info()
        if not self.config.enabled:
            return FlushResult(rid, FlushStatus.DISABLED)
        if not snapshot:
            return FlushResult(rid, FlushStatus.EMPTY, dropped=info.dropped_events)
        outcome = await self.sink.send(info, snapshot)
        with self._lock:  # record() only appends, so the sent events are still the first ones
            del run.events[: outcome.done if outcome.retryable else len(snapshot)]
        return FlushResult.of(rid, outcome, len(snapshot))

    async def flush_pending(self) -> list[FlushResult]:
        """Retry every closed run whose flush failed (the background retrier calls this too)."""
        runs = self.pending.take_all()
        results: list[FlushResult] = []
        try:
            for run in runs:
                results.append(await self._flush(run))
        except (
            BaseException
        ):  # cancelled (a bounded flush at exit): keep the run in flight and those after it
            for run in runs[len(results) :]:
                if self.pending.get(run.run_id) is None:
                    self.pending.add(run)
            raise
        return results

    def pending_stats(self) -> PendingStats:
        """Runs and events kept for a retry, what the bounds dropped, and the background retry's state."""
        counts = self.pending.counts()
        retries, next_retry_s = self._retrier.state()
        return PendingStats(
            runs=len(counts),
            events=sum(counts.values()),
            dropped_runs=self.pending.dropped_runs,
            dropped_events=self.pending.dropped_events,
            retries=retries,
            next_retry_s=next_retry_s,
        )

    def flush_at_exit(self) -> None:
        """Send the runs still pending once more, for at most exit_flush_timeout_s (called by atexit)."""
        flush_at_exit(self, self._retrier)

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop the background retry (pending runs stay; flush_pending() still sends them)."""
        self._retrier.stop(timeout_s)

    # -- inspection ---------------------------------------------------------------------------------------
    @property
    def current_run_id(self) -> str | None:
        """The run begin_run() opened in this context, while it is open."""
        current = self._current.get()
        return current if current is not None and current in self._open else None

    def open_runs(self) -> list[str]:
        with self._lock:
            return list(self._open)

    def pending_runs(self) -> dict[str, int]:
        """Closed runs waiting for a retry, with their event counts."""
        return self.pending.counts()

    def buffered(self, run_id: str | None = None) -> list[GuardrailEvent]:
        """A copy of the events buffered for an open or pending run (default: the current run)."""
        rid = run_id or self._current.get() or ""
        with self._lock:
            run = self._open.get(rid) or self.pending.get(rid)
            return list(run.events) if run else []

    # -- internals ----------------------------------------------------------------------------------------
    def _route(self, event: GuardrailEvent) -> BufferedRun | None:
        if event.run_id is not None and event.run_id in self._open:
            return self._open[event.run_id]
        current = self._current.get()
        if current is not None and current in self._open:
            return self._open[current]
        if len(self._open) == 1:
            return next(iter(self._open.values()))
        return None

    async def _flush(self, run: BufferedRun) -> FlushResult:
        if not self.config.enabled:
            return FlushResult(run.run_id, FlushStatus.DISABLED)
        if not run.events:
            return FlushResult(run.run_id, FlushStatus.EMPTY, dropped=run.dropped)
        outcome = await self.sink.send(run.info(), run.events)
        result = FlushResult.of(run.run_id, outcome, len(run.events), dropped=run.dropped)
        if result.status is FlushStatus.REJECTED:
            log.error(
                "guardrail run %s: backend refused %d events: %s", run.run_id, result.rejected, result.error
            )
        elif result.status is FlushStatus.FAILED:
            run.events = run.events[outcome.done :]
            self.pending.add(run)
            register_for_exit(self)
            self._retrier.wake()
            log.warning(
                "guardrail run %s: flush failed, %d events kept for a retry: %s",
                run.run_id,
                len(run.events),
                outcome.error,
            )
        return result
