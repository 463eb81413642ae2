"""Prompt, skill and review diffs of the console: the bounded line diff against difflib (the baseline it replaced).

Two texts of random lines drawn from a small alphabet (many repeated lines: the input that makes difflib's
SequenceMatcher cubic, issue 28 / review finding N2), at several sizes; prints each one's time and the ratio.
difflib runs only up to ``--baseline-max`` bytes (beyond it takes minutes).

    .venv/bin/python bench/console_diff.py [--sizes 4096,8192,16384,65536] [--baseline-max 16384]
"""

from __future__ import annotations

import argparse
import difflib
import random
import time

from stockade.model_api.console.prompts.diff import diff_lines


def text(rnd: random.Random, size: int, alphabet: list[str]) -> str:
    lines: list[str] = []
    n = 0
    while n < size:
        lines.append(rnd.choice(alphabet))
        n += len(lines[-1]) + 1
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="4096,8192,16384,65536")
    parser.add_argument("--baseline-max", type=int, default=16384)
    args = parser.parse_args()
    rnd = random.Random(28)
    for size in (int(s) for s in args.sizes.split(",")):
        old, new = text(rnd, size, ["a", "b", "c"]), text(rnd, size, ["a", "b", "c"])
        start = time.perf_counter()
        rows = diff_lines(old, new)
        bounded = time.perf_counter() - start
        line = f"{size:>7} B each: bounded diff {bounded:6.2f} s ({len(rows)} rows)"
        if size <= args.baseline_max:
            start = time.perf_counter()
            matcher = difflib.SequenceMatcher(None, old.splitlines(), new.splitlines(), autojunk=False)
            list(matcher.get_grouped_opcodes(3))
            baseline = time.perf_counter() - start
            line += f"; difflib {baseline:6.2f} s; ratio difflib/bounded {baseline / bounded:5.1f}x"
        print(line, flush=True)


if __name__ == "__main__":
    main()
