"""The hang backstop seen from a pytest run: a teardown that blocks the event loop, or a run past its deadline,
ends the run within its bound, naming the test and phase, with every thread's stack and the pending asyncio tasks.

Each inner run is a subprocess with a 120 s limit of its own (the watchdog fires after 2-3 s)."""

from __future__ import annotations

import time

import pytest

pytest_plugins = ["pytester"]

# An async fixture whose teardown waits on a task that swallows every cancellation: what hung CI for 12 minutes.
HANGING_TEARDOWN = """
import asyncio
import pytest

async def stubborn():
    while True:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            pass

@pytest.fixture
async def service():
    task = asyncio.create_task(stubborn(), name="stubborn-shutdown-step")
    yield
    task.cancel()
    await task

async def test_uses_the_service(service):
    assert True

def test_after():
    pass
"""


@pytest.fixture
def inner(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    for name in ("CI", "STOCKADE_HANG_S", "STOCKADE_RUN_DEADLINE"):
        monkeypatch.delenv(name, raising=False)
    pytester.makeini(
        "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\ntimeout = 0\n"
    )
    return pytester


def test_a_teardown_blocked_in_the_event_loop_ends_the_run_with_its_stacks(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    inner.makepyfile(test_hang=HANGING_TEARDOWN)
    monkeypatch.setenv("STOCKADE_HANG_S", "2")
    result = inner.runpytest_subprocess("-p", "no:cacheprovider", timeout=120)
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == 3, out
    assert "stockade hang watchdog" in out
    assert "test_hang.py::test_uses_the_service (teardown)" in out  # which test, which phase
    assert "Thread 0x" in out and "most recent call first" in out  # every thread's stack
    assert (
        "task stubborn-shutdown-step" in out and "in stubborn" in out
    )  # the pending task and where it waits
    assert "test_after" not in out.split("stockade hang watchdog")[0]  # the run stopped at the hang


def test_a_run_past_its_deadline_ends_with_its_stacks(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    inner.makepyfile(
        test_slow="""
        import time

        def test_slow():
            time.sleep(600)
        """
    )
    monkeypatch.setenv("STOCKADE_HANG_S", "0")  # per-test watchdog off: the run deadline must catch it
    # set inside the inner run, so that its start-up time (long on a loaded machine) does not use the deadline up
    inner.makeconftest(
        """
        import os, time

        def pytest_configure(config):
            os.environ["STOCKADE_RUN_DEADLINE"] = str(time.time() + 3)
        """
    )
    result = inner.runpytest_subprocess("-p", "no:cacheprovider", timeout=120)
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == 3, out
    assert "the whole run passed its deadline" in out
    assert "test_slow.py::test_slow (call)" in out
    assert "in test_slow" in out  # the main thread's stack shows where the test was


def test_a_quick_run_is_not_touched(inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    inner.makepyfile(test_quick="def test_quick():\n    pass\n")
    monkeypatch.setenv("STOCKADE_HANG_S", "30")
    monkeypatch.setenv("STOCKADE_RUN_DEADLINE", str(time.time() + 600))
    result = inner.runpytest_subprocess("-p", "no:cacheprovider", timeout=120)
    result.assert_outcomes(passed=1)
    assert "stockade hang watchdog" not in result.stdout.str() + result.stderr.str()
