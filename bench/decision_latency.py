"""What the decision head, the decoded views, the lexical view and a short document's sentences add to the
classifier's own time (not a timed test).

Scores the same benign texts (short ones of one window, where the lexical view is stacked, and documents of 1 kB
and 20 kB), interleaved, with the shipped classifier as it runs (head, views, lexical view and the screener's top
sentence of a short document's most suspicious window read alone, ``sentences.read``), with every sentence of that
window read instead, with the sentences off, with the lexical view off too, with the head off too, and with none;
prints p50 per setting and the ratio to "none", all measured in the same run.

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
    head, lexical, sentences = model.head, model.lexical, model.sentence_max_windows
    read = model.sentence_read
    real_views = model_module.views

    def no_views(text: str, count: Callable[[str], int]) -> list[str]:
        return []

    settings: dict[str, Any] = {
        "shipped (head, views, lexical, sentences)": (head, real_views, lexical, sentences, read),
        "every sentence of the window": (head, real_views, lexical, sentences, 0),
        "sentences off": (head, real_views, lexical, 1, read),
        "lexical off too": (head, real_views, None, 1, read),
        "head off too": (None, real_views, None, 1, read),
        "none": (None, no_views, None, 1, read),
    }
    short = [t for t in pool if 60 <= len(t) <= 240]
    for size in (0, 1_000, 20_000):
        texts = rng.sample(short, args.n) if size == 0 else documents(pool, size, args.n, rng)
        times: dict[str, list[float]] = {k: [] for k in settings}
        for text in texts:
            for name, (h, v, lex, sent, k) in settings.items():
                model.head, model_module.views, model.lexical = h, v, lex  # type: ignore[assignment]
                model.sentence_max_windows, model.sentence_read = sent, k
                start = time.perf_counter()
                model.score(text, max_windows=4096)
                times[name].append((time.perf_counter() - start) * 1000)
        model.head, model_module.views, model.lexical = head, real_views, lexical  # type: ignore[assignment]
        model.sentence_max_windows, model.sentence_read = sentences, read
        base = statistics.median(times["none"])
        line = ", ".join(
            f"{k} {statistics.median(v):.1f} ms ({statistics.median(v) / base:.2f}x)"
            for k, v in times.items()
        )
        print(f"{f'{size // 1000} kB' if size else 'short (60-240 characters)'}, p50 over {args.n}: {line}")


if __name__ == "__main__":
    main()
