"""Hang backstop: a test (setup, call and teardown) or the whole run that outlives its deadline ends the run,
fast and readably, instead of waiting for CI's limit.

pytest-timeout (``timeout`` in pyproject, signal method) stays the first line: it fails the one test and the run
goes on. It cannot help when its SIGALRM arrives while an async fixture's teardown is blocked in the event loop and
the exception is swallowed or the loop is re-entered (a 12-minute hang, 2026-11-28). So a watchdog *thread*, which
needs nothing from the main thread, also times each test: at pytest-timeout's limit plus ``HANG_MARGIN_S`` it
writes which test and phase hung, every thread's stack and every pending asyncio task with the frames it waits
in, to the terminal (a copy of stderr taken before output capture), then ends the process with status 3.

A whole-run deadline works the same way: ``STOCKADE_RUN_DEADLINE`` (Unix time, set by ``.ci/run``) arms it at
session start. ``STOCKADE_HANG_S`` overrides the per-test deadline (seconds; 0 turns the per-test watchdog off).
"""

from __future__ import annotations

import asyncio
import faulthandler
import gc
import os
import threading
import time
import traceback
from collections.abc import Generator
from types import FrameType
from typing import Any

import pytest

HANG_MARGIN_S = 60.0
SESSION_FINISH_S = 300.0
EXIT_STATUS = 3  # pytest's "internal error": never mistaken for a pass or for "no tests"


def _running_loops() -> list[asyncio.AbstractEventLoop]:
    return [o for o in gc.get_objects() if isinstance(o, asyncio.AbstractEventLoop) and o.is_running()]


def await_chain(task: asyncio.Task[Any]) -> list[FrameType]:
    """The frames of a suspended task from its coroutine down to what it awaits (``Task.get_stack`` gives one)."""
    frames: list[FrameType] = []
    awaited: Any = task.get_coro()
    while awaited is not None and len(frames) < 40:
        frame = next(
            (getattr(awaited, a) for a in ("cr_frame", "gi_frame", "ag_frame") if getattr(awaited, a, None)),
            None,
        )
        if frame is None:
            break
        frames.append(frame)
        awaited = next(
            (
                getattr(awaited, a)
                for a in ("cr_await", "gi_yieldfrom", "ag_await")
                if getattr(awaited, a, None)
            ),
            None,
        )
    return frames


def describe_tasks() -> str:
    """Every pending task of every running event loop, with the frames it is suspended in."""
    lines: list[str] = []
    for loop in _running_loops():
        tasks: set[asyncio.Task[Any]] = set()
        for _ in range(5):  # the set can change under us (another thread owns the loop): try again
            try:
                tasks = asyncio.all_tasks(loop)
                break
            except RuntimeError:
                time.sleep(0.01)
        lines.append(f"--- event loop {loop!r}: {len(tasks)} pending task(s)")
        for task in sorted(tasks, key=lambda t: t.get_name()):
            lines.append(f"task {task.get_name()}: {task.get_coro()!r}")
            frames = await_chain(task)
            for summary in traceback.StackSummary.extract((f, f.f_lineno) for f in frames).format():
                lines.append("    " + summary.rstrip().replace("\n", "\n    "))
    return "\n".join(lines) + "\n"


class HangWatchdog:
    """Registered by the stockade plugin: per-test and whole-run deadlines on a watchdog thread."""

    def __init__(self, config: pytest.Config) -> None:
        self._config = config
        self._out = os.dup(2)  # the terminal's stderr: pytest_configure runs with output capture suspended
        self._lock = threading.Lock()
        self._test: threading.Timer | None = None
        self._run: threading.Timer | None = None
        self.where = "collecting"

    # --- deadlines ---------------------------------------------------------------------------------------------

    def per_test_s(self, item: pytest.Item) -> float:
        if "STOCKADE_HANG_S" in os.environ:
            return float(os.environ["STOCKADE_HANG_S"])
        marker = item.get_closest_marker("timeout")
        if marker is not None and marker.args:
            limit = float(marker.args[0])
        else:
            try:
                limit = float(self._config.getini("timeout") or 0)
            except ValueError:  # pytest-timeout not installed: no ini option
                limit = 0.0
        return limit + HANG_MARGIN_S if limit > 0 else 0.0

    def _expire(self, why: str) -> None:
        with self._lock:
            text = (
                f"\n\n===== stockade hang watchdog: {why} =====\n"
                f"hung in: {self.where}\n"
                "every thread's stack (most recent call first):\n"
            )
            os.write(self._out, text.encode())
            faulthandler.dump_traceback(file=self._out, all_threads=True)
            try:
                tasks = describe_tasks()
            except Exception as exc:
                tasks = f"(asyncio tasks unavailable: {exc})\n"
            os.write(self._out, b"pending asyncio tasks:\n" + tasks.encode(errors="replace"))
            os.write(self._out, f"===== the run ends here (exit status {EXIT_STATUS}) =====\n".encode())
            os._exit(EXIT_STATUS)

    def _timer(self, after_s: float, why: str) -> threading.Timer:
        timer = threading.Timer(max(after_s, 0.0), self._expire, args=(why,))
        timer.daemon = True
        timer.name = "stockade-hang-watchdog"
        timer.start()
        return timer

    # --- hooks ---------------------------------------------------------------------------------------------------

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        deadline = os.environ.get("STOCKADE_RUN_DEADLINE")
        if deadline:
            left = float(deadline) - time.time()
            self._run = self._timer(
                left, f"the whole run passed its deadline (STOCKADE_RUN_DEADLINE, {left:.0f} s)"
            )

    @pytest.hookimpl(wrapper=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> Generator[None, None, None]:
        # the fixtures' session teardown and the plugins' cleanup (servers stopping) get a deadline of their own;
        # the whole-run timer is never cancelled (a daemon thread: it dies with the process)
        self.where = "session finish (session-scoped fixtures and plugins stopping)"
        self._test = self._timer(SESSION_FINISH_S, f"the session's finish ran past {SESSION_FINISH_S:.0f} s")
        return (yield)

    def pytest_unconfigure(self) -> None:
        if self._test is not None:
            self._test.cancel()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, object, object]:
        limit = self.per_test_s(item)
        self.where = item.nodeid
        if limit > 0:
            self._test = self._timer(
                limit, f"{item.nodeid} ran past {limit:.0f} s (setup, call and teardown)"
            )
        try:
            return (yield)
        finally:
            if self._test is not None:
                self._test.cancel()
                self._test = None
            self.where = f"between tests (after {item.nodeid})"

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, None, None]:
        self.where = f"{item.nodeid} (setup)"
        return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        self.where = f"{item.nodeid} (call)"
        return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Generator[None, None, None]:
        self.where = f"{item.nodeid} (teardown)"
        return (yield)
