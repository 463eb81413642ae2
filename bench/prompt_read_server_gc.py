"""prompt-api as ``python -m stockade.prompt_api`` runs it, plus a record of its garbage-collector pauses (not a test).

    .venv/bin/python bench/prompt_read.py --server-wrapper bench/prompt_read_server_gc.py [...]

On SIGTERM (the benchmark's stop) it prints, per generation, how many collections ran, their total and longest
pause and how many took over 10 ms, to stderr. This is how the read tail's stall was found (issue 18): full
(generation 2) collections walking the whole startup heap; compare with ``PROMPT_API_GC_FREEZE=false``.
"""

from __future__ import annotations

import gc
import signal
import sys
import time
from typing import Any

pauses: dict[int, list[float]] = {0: [], 1: [], 2: []}
started = [0.0]


def on_gc(phase: str, info: dict[str, Any]) -> None:
    if phase == "start":
        started[0] = time.perf_counter()
    else:
        pauses[info["generation"]].append((time.perf_counter() - started[0]) * 1000)


def report(*_: object) -> None:
    for generation, found in pauses.items():
        if found:
            found.sort()
            print(
                f"server GC generation {generation}: {len(found)} collections, {sum(found):.0f} ms in all,"
                f" median {found[len(found) // 2]:.2f} ms, longest {found[-1]:.1f} ms,"
                f" {sum(1 for p in found if p > 10)} over 10 ms",
                file=sys.stderr,
                flush=True,
            )
    print(f"server GC: {gc.get_freeze_count()} objects frozen", file=sys.stderr, flush=True)
    raise SystemExit(0)


if __name__ == "__main__":
    gc.callbacks.append(on_gc)
    signal.signal(signal.SIGTERM, report)
    from stockade.prompt_api.__main__ import main

    main()
    report()
