"""What the decision head and the decoded views add to the classifier's own time (not a timed test).

Scores the same benign texts of 1 kB and 20 kB, interleaved, with the shipped classifier as it runs (head and
views on), with the head off, and with neither; prints p50 per setting and the ratio to "neither", all
measured in the same run.

    .venv/bin/python bench/decision_latency.py [--n 30]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

from calibrate_decision import documents
from classifier_data import load_all
from window_scores import model_dir

import stockade.guardrails.checks.classification.model as model_module
from stockade.guardrails.checks.classification.model import load


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=30)
    args = parser.parse_args()
    import random

    rng = random.Random(5)
    pool = [e.text for e in load_all() if e.label == "benign"]
    model = load(str(model_dir()))
    head = model.head
    real_views = model_module.views

    def no_views(text: str, count: Callable[[str], int]) -> list[str]:
        return []

    settings: dict[str, Any] = {
        "shipped (head + views)": (head, real_views),
        "head off": (None, real_views),
        "neither": (None, no_views),
    }
    for size in (1_000, 20_000):
        texts = documents(pool, size, args.n, rng)
        times: dict[str, list[float]] = {k: [] for k in settings}
        for text in texts:
            for name, (h, v) in settings.items():
                model.head, model_module.views = h, v  # type: ignore[assignment]
                start = time.perf_counter()
                model.score(text, max_windows=4096)
                times[name].append((time.perf_counter() - start) * 1000)
        model.head, model_module.views = head, real_views  # type: ignore[assignment]
        base = statistics.median(times["neither"])
        line = ", ".join(
            f"{k} {statistics.median(v):.1f} ms ({statistics.median(v) / base:.2f}x)"
            for k, v in times.items()
        )
        print(f"{size // 1000} kB, p50 over {args.n}: {line}")


if __name__ == "__main__":
    main()
