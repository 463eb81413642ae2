"""Runs kept after a failed flush: bounded (runs and events, drops counted), retried in the background with
backoff, and sent once more at interpreter exit within a time bound. Against a scripted backend on a real
socket (conftest), a port where nothing listens, and a socket that accepts and never answers."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator

import pytest

from stockade.guardrails.events import EventKind, GuardrailEvent
from stockade.guardrails.storage import FlushStatus, GuardrailsStorageHook, StorageConfig

FAST = {"backoff_initial_s": 0.01, "backoff_max_s": 0.05, "timeout_s": 5, "max_retries": 0}


def _event() -> GuardrailEvent:
    return GuardrailEvent(kind=EventKind.CHECK, name="pii", action="allow")


def _hook(url: str, **cfg: object) -> GuardrailsStorageHook:
    return GuardrailsStorageHook(
        StorageConfig(enabled=True, backend_url=url, **{**FAST, **cfg}),  # type: ignore[arg-type]
        environ={},
    )


async def _failed_run(hook: GuardrailsStorageHook, events: int = 1) -> str:
    run_id = hook.begin_run()
    for _ in range(events):
        hook.record(_event())
    result = await hook.end_run()
    assert result.status is FlushStatus.FAILED
    return run_id


async def _until(condition, what: str, deadline_s: float = 15.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + deadline_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


async def test_a_failed_run_is_retried_in_the_background_until_the_backend_recovers(backend) -> None:
    backend.script = [503, 503]  # end_run's flush and the first background round fail, the second succeeds
    hook = _hook(backend.url, retry_initial_s=0.05, retry_max_s=1.0)
    try:
        run_id = await _failed_run(hook, events=2)
        assert hook.pending_runs() == {run_id: 2}
        await _until(lambda: hook.pending_runs() == {} and len(backend.stored) == 2, "the background retry")
        assert len(backend.posts) == 3
        await _until(lambda: hook.pending_stats().next_retry_s is None, "the retrier to stop")
        stats = hook.pending_stats()
        assert stats.retries == 2 and (stats.runs, stats.events, stats.dropped_runs) == (0, 0, 0)
    finally:
        hook.close()


async def test_background_retry_backs_off_up_to_its_bound(dead_url) -> None:
    hook = _hook(dead_url, retry_initial_s=0.02, retry_max_s=0.08)
    try:
        await _failed_run(hook)
        seen: set[tuple[int, float | None]] = set()

        def rounds() -> int:
            stats = hook.pending_stats()  # retries and next_retry_s are read together
            seen.add((stats.retries, stats.next_retry_s))
            return stats.retries

        await _until(lambda: rounds() >= 4, "four failed rounds")
        # Each snapshot: the delay doubles per failed round from 0.02 and stops at 0.08.
        assert all(delay == min(0.02 * 2**n, 0.08) for n, delay in seen), seen
        assert hook.pending_stats().next_retry_s == 0.08
        assert hook.pending_stats().runs == 1  # still kept: the backend never answered
    finally:
        hook.close()
    assert hook.pending_stats().next_retry_s is None


async def test_kept_runs_are_bounded_and_the_drops_counted(backend, dead_url) -> None:
    hook = _hook(dead_url, retry_pending=False, max_pending_runs=3, max_pending_events=5)
    ids = [await _failed_run(hook) for _ in range(5)]
    assert list(hook.pending_runs()) == ids[2:]  # the oldest two dropped
    stats = hook.pending_stats()
    assert (stats.runs, stats.events, stats.dropped_runs, stats.dropped_events) == (3, 3, 2, 2)

    big = await _failed_run(hook, events=4)  # 3 + 4 events > 5: the oldest runs go first
    assert hook.pending_runs() == {ids[4]: 1, big: 4}
    assert hook.pending_stats().dropped_runs == 4

    huge = await _failed_run(hook, events=8)  # alone over the bound: keeps its first 5 events
    assert hook.pending_runs() == {huge: 5}
    stats = hook.pending_stats()
    assert (stats.dropped_runs, stats.dropped_events) == (6, 2 + 2 + 5 + 3)

    hook.sink.config = hook.config = hook.config.model_copy(update={"backend_url": backend.url})
    [result] = await hook.flush_pending()
    assert result.ok and result.sent == 5 and result.dropped == 3
    assert backend.posts[-1]["run"]["dropped_events"] == 3  # the backend hears what the bound cost the run


_EXIT_SCRIPT = textwrap.dedent(
    """
    import asyncio, logging, sys
    from stockade.guardrails.events import EventKind, GuardrailEvent
    from stockade.guardrails.storage import GuardrailsStorageHook, StorageConfig

    logging.basicConfig(level=logging.ERROR)
    first, at_exit, exit_bound = sys.argv[1], sys.argv[2], float(sys.argv[3])
    config = StorageConfig(enabled=True, backend_url=first, max_retries=0, timeout_s=30,
                           retry_pending=False, exit_flush_timeout_s=exit_bound)
    hook = GuardrailsStorageHook(config, environ={})
    hook.begin_run("run-at-exit")
    for _ in range(2):
        hook.record(GuardrailEvent(kind=EventKind.CHECK, name="pii", action="allow"))
    print(asyncio.run(hook.end_run()).status.value, flush=True)
    hook.sink.config = hook.config = config.model_copy(update={"backend_url": at_exit})
    """
)


def _run_exit_script(
    first: str, at_exit: str, bound_s: float, *, deadline_s: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _EXIT_SCRIPT, first, at_exit, str(bound_s)],
        capture_output=True,
        text=True,
        timeout=deadline_s,
        check=False,
    )


def test_runs_still_pending_are_sent_once_more_at_interpreter_exit(backend, dead_url) -> None:
    done = _run_exit_script(dead_url, backend.url, 10.0)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "failed"  # end_run could not reach the backend ...
    assert {e["run_id"] for e in backend.stored.values()} == {"run-at-exit"}  # ... the exit flush did
    assert len(backend.stored) == 2


@pytest.fixture
def silent_url() -> Iterator[str]:
    """A socket that accepts connections and never answers (an HTTP request to it hangs until its timeout)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    sock.close()


def test_the_exit_flush_is_bounded_in_time(dead_url, silent_url) -> None:
    # The exit flush to a backend that never answers would wait for the request's timeout_s=30 (the process
    # would then outlive the 25 s deadline and the test fail); the bound stops it after 1 s.
    done = _run_exit_script(dead_url, silent_url, 1.0, deadline_s=25)
    assert done.returncode == 0, done.stderr
    assert "flush at exit stopped: TimeoutError" in done.stderr
    assert "still unsent at exit" in done.stderr
