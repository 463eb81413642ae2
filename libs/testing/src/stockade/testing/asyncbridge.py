"""Run a coroutine to completion from sync fixture code, whatever loop the caller may be in."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["run_blocking"]

T = TypeVar("T")


def run_blocking(make: Callable[[], Coroutine[Any, Any, T]], timeout: float = 60.0) -> T:
    """Run ``make()`` in a fresh event loop on a worker thread and return its result."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(make())).result(timeout=timeout)
