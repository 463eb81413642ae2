"""Secrets evaluation helpers for eval_detectors.py: line-level precision/recall on CredSweeper's samples
against its expected output, file-disjoint train/test split (the upstream data has no split).

Run alone: ``.venv/bin/python bench/eval_secrets.py [--split train|test] [--show]`` prints the scanner's and
detect-secrets' numbers on one split; ``--show`` lists missed findings and false-positive lines (use it on
the train split only: tune on train, report on test)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

Line = tuple[str, int]  # (file name, 1-based line number)


def split_files(samples: Path, split: str) -> list[Path]:
    files = sorted(p for p in samples.rglob("*") if p.is_file())
    return [
        p
        for p in files
        if (int(hashlib.sha256(p.name.encode()).hexdigest(), 16) % 10 < 6) == (split == "train")
    ]


def expected_findings(expected: Path, names: set[str]) -> list[frozenset[Line]]:
    """One entry per expected finding: the set of lines it spans (a PEM key spans its body lines)."""
    out = []
    for item in json.loads(expected.read_text()):
        lines = set()
        for ld in item["line_data_list"]:
            name = ld["path"].split("tests/samples/", 1)[-1]
            if name in names and ld["line_num"] > 0:
                lines.add((name, ld["line_num"]))
        if lines:
            out.append(frozenset(lines))
    return out


def read_text(path: Path) -> str | None:
    """Text files only: archives and binaries (NUL bytes, not UTF-8) are skipped."""
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return None
    return None if "\x00" in text else text


def lines_of_hits(text: str, starts: list[int]) -> set[int]:
    line_starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]
    import bisect

    return {bisect.bisect_right(line_starts, s) for s in starts}


def run_scanner(files: list[Path], root: Path, scan: Callable[[str], list[int]]) -> set[Line]:
    found = set()
    for f in files:
        text = read_text(f)
        if text is None:
            continue
        name = str(f.relative_to(root))
        found |= {(name, n) for n in lines_of_hits(text, scan(text))}
    return found


def run_detect_secrets(files: list[Path], root: Path) -> set[Line]:
    """detect-secrets alone, default plugins and filters, scanning each file."""
    from detect_secrets.core.secrets_collection import SecretsCollection
    from detect_secrets.settings import default_settings

    found = set()
    with default_settings():
        for f in files:
            coll = SecretsCollection()
            coll.scan_file(str(f))
            name = str(f.relative_to(root))
            for _, secret in coll:
                found.add((name, secret.line_number))
    return found


def prf(found: set[Line], expected: list[frozenset[Line]]) -> dict[str, Any]:
    """Recall: expected findings with at least one reported line. Precision: reported lines that belong to
    some expected finding."""
    all_lines = set().union(*expected) if expected else set()
    hit = sum(1 for f in expected if f & found)
    good = len(found & all_lines)
    p = good / len(found) if found else 0.0
    r = hit / len(expected) if expected else 0.0
    return {
        "precision": p,
        "recall": r,
        "f1": 2 * p * r / (p + r) if p + r else 0.0,
        "reported": len(found),
        "expected": len(expected),
        "fp_lines": len(found - all_lines),
        "missed": len(expected) - hit,
    }


def main() -> None:
    import argparse

    from stockade.guardrails.checks.exfiltration.secrets import SecretScanner

    parser = argparse.ArgumentParser()
    parser.add_argument("--split", choices=("train", "test"), default="test")
    parser.add_argument("--show", action="store_true", help="List misses and false positives.")
    args = parser.parse_args()
    data = Path(__file__).resolve().parents[2] / "shared" / "data" / "secrets"
    root = data / "samples"
    files = split_files(root, args.split)
    expected = expected_findings(data / "expected_output.json", {str(f.relative_to(root)) for f in files})
    scanner = SecretScanner()
    ours = run_scanner(files, root, lambda text: [h.start for h in scanner.scan(text)])
    result = {
        "split": args.split,
        "files": len(files),
        "ours": prf(ours, expected),
        "detect_secrets": prf(run_detect_secrets(files, root), expected),
    }
    print(json.dumps(result, indent=1))
    if args.show:
        lines = set().union(*expected) if expected else set()
        for finding in expected:
            if not finding & ours:
                print("MISS", min(finding))
        for line in sorted(ours - lines):
            print("FP  ", line)


__all__ = ["expected_findings", "prf", "run_detect_secrets", "run_scanner", "split_files"]

if __name__ == "__main__":
    main()
