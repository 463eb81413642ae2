"""Progress lines for long commands: what is starting, what is ready (and how fast), what failed and why."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

_COLOR = sys.stdout.isatty()


def _c(code: str, text: str) -> str:
    return f"\033[{code}m{text}\033[0m" if _COLOR else text


def info(message: str) -> None:
    print(f"  {message}", flush=True)


def ok(part: str, message: str) -> None:
    print(f"{_c('32', 'ready')}    {part:<19} {message}", flush=True)


def fail(part: str, message: str) -> None:
    print(f"{_c('31', 'failed')}   {part:<19} {message}", file=sys.stderr, flush=True)


@contextmanager
def starting(part: str, detail: str = "") -> Iterator[None]:
    """Prints 'starting', then 'ready (N ms)' or 'failed: reason'."""
    print(f"{_c('33', 'starting')} {part:<19} {detail}".rstrip(), flush=True)
    t0 = time.perf_counter()
    try:
        yield
    except BaseException as exc:
        fail(part, f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
        raise
    ok(part, f"({(time.perf_counter() - t0) * 1000:.0f} ms)")
