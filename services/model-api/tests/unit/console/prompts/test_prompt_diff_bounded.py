"""The console's diff is bounded (review finding N2): two 64 KB versions full of repeated lines (difflib's cubic
case) are compared on a worker thread while the event loop keeps running, and the rows are always a correct
edit script, also when the search stopped at its deadline."""

import asyncio
import random

import pytest

from stockade.model_api.console.prompts.diff import MAX_DIFF_CHARS, diff_lines, diff_off_loop


def _text(rnd: random.Random, size: int) -> str:
    return "\n".join(rnd.choice(["a", "b", "c"]) for _ in range(size // 2))


def _sides(rows):
    old = [r.text for r in rows if r.kind in ("same", "removed")]
    new = [r.text for r in rows if r.kind in ("same", "added")]
    return old, new


@pytest.mark.parametrize("seed", [1, 2])
def test_every_line_is_accounted_for(seed):
    rnd = random.Random(seed)
    old, new = _text(rnd, 3000), _text(rnd, 3000)
    rows = diff_lines(old, new, context=10**9)  # every row shown: the two sides rebuild both texts
    assert _sides(rows) == (old.splitlines(), new.splitlines())
    numbered = [r.old for r in rows if r.old is not None]
    assert numbered == list(range(1, len(old.splitlines()) + 1))


async def test_two_64_kb_versions_are_compared_while_the_loop_keeps_answering():
    rnd = random.Random(28)
    old, new = _text(rnd, 64 * 1024), _text(rnd, 64 * 1024)
    ticks = 0
    done = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not done.is_set():
            await asyncio.sleep(0.01)
            ticks += 1

    task = asyncio.create_task(ticker())
    try:
        rows = await asyncio.wait_for(diff_off_loop(old, new), timeout=60)  # seconds, not minutes
    finally:
        done.set()
        await task
    assert ticks > 10  # the event loop ran on while the diff was computed
    assert _sides(diff_lines(old, new, context=10**9)) == (old.splitlines(), new.splitlines())
    assert any(r.kind == "added" for r in rows) and any(r.kind == "removed" for r in rows)


def test_texts_over_the_size_bound_are_not_compared():
    rows = diff_lines("x" * MAX_DIFF_CHARS, "y")
    assert [r.kind for r in rows] == ["gap"] and "too large" in rows[0].text
